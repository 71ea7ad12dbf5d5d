package backends

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// postgresBackend is one PostgreSQL cluster, behind a real pgbouncer when
// the scenario asks. The scenario's nodes do not count it. The protected
// storage and a postgres fence live in it too, whatever the lock
// (PostgresOf).
type postgresBackend struct{}

func init() { Register(postgresBackend{}) }

func (postgresBackend) Name() clients.Backend { return clients.PostgresBackend }

func (postgresBackend) Nodes(clients.Spec) int { return 0 }

func (postgresBackend) Check(Options) *FieldError { return nil }

func (postgresBackend) Settings() Settings { return PostgresSettings{} }

// PostgresSettings are a story's settings for its PostgreSQL server.
type PostgresSettings struct {
	// IdleSessionTimeout sets PostgreSQL's idle_session_timeout.
	IdleSessionTimeout time.Duration `yaml:"idle_session_timeout"`
	// Pgbouncer puts a real pgbouncer, in this pool mode (transaction or
	// session; one server connection in transaction mode, one per client in
	// session mode), between the lock's connections
	// and PostgreSQL; the storage's connections go direct. Empty: none.
	Pgbouncer string `yaml:"pgbouncer"`
	// IdleInTransactionSessionTimeout sets PostgreSQL's
	// idle_in_transaction_session_timeout.
	IdleInTransactionSessionTimeout time.Duration `yaml:"idle_in_transaction_session_timeout"`
}

// PoolModes are the values of PostgresSettings.Pgbouncer ("" is none).
var PoolModes = []string{"", "transaction", "session"}

// Check refuses a pool mode pgbouncer does not have, and a negative
// timeout.
func (s PostgresSettings) Check() *FieldError {
	switch {
	case !slices.Contains(PoolModes, s.Pgbouncer):
		return &FieldError{"pgbouncer", fmt.Sprintf("expected transaction or session (pgbouncer's pool_mode), got %q", s.Pgbouncer)}
	case s.IdleInTransactionSessionTimeout < 0:
		return &FieldError{"idle_in_transaction_session_timeout", fmt.Sprintf("expected a positive duration, got %v", s.IdleInTransactionSessionTimeout)}
	case s.IdleSessionTimeout < 0:
		return &FieldError{"idle_session_timeout", fmt.Sprintf("expected a positive duration, got %v", s.IdleSessionTimeout)}
	}
	return nil
}

// JSONSchemaExtend lists pgbouncer's values in the schema.
func (PostgresSettings) JSONSchemaExtend(js *jsonschema.Schema) {
	schemaEnum(js, "pgbouncer", PoolModes)
}

// NodeClockless is "": the nodes of a PostgreSQL lock's scenario, if it
// has any, are a Redis fence's.
func (postgresBackend) NodeClockless() string { return "" }

func (postgresBackend) Shape(int, time.Duration) (string, string) {
	return "one PostgreSQL server", "no TTL (the lock lasts as long as its session or transaction)"
}

func (postgresBackend) Image() (string, string) {
	return env.DefaultPostgresImage, "PostgreSQL `IMAGE`: initdb and postgres on its PATH and a postgres user, e.g. postgres:17"
}

func (postgresBackend) Start(ctx context.Context, o Options) (Servers, error) {
	set := SettingsOf[PostgresSettings](o)
	pg, err := env.StartPostgres(ctx, "", env.PostgresOptions{
		Image:                           o.Image,
		IdleSessionTimeout:              set.IdleSessionTimeout,
		IdleInTransactionSessionTimeout: set.IdleInTransactionSessionTimeout,
	})
	if err != nil {
		return nil, err
	}
	s := &postgresServers{pg: pg, poolMode: set.Pgbouncer}
	if set.Pgbouncer != "" {
		// Transaction pooling with one server connection: every client's
		// statements share it. Session pooling needs one per client, or a
		// second client waits for the first.
		size := 1
		if set.Pgbouncer == "session" {
			size = o.Clients
		}
		if s.pgb, err = env.StartPgbouncer(ctx, pg, "", env.PgbouncerOptions{PoolMode: set.Pgbouncer, PoolSize: size}); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// postgresServers are a run's PostgreSQL cluster and its pgbouncer.
type postgresServers struct {
	pg       *env.Postgres
	pgb      *env.Pgbouncer // nil: the lock's connections go straight to pg
	poolMode string
}

// PostgresOf is the PostgreSQL cluster of s, nil when s are another
// backend's: the run keeps the protected storage there.
func PostgresOf(s Servers) *env.Postgres {
	if p, ok := s.(*postgresServers); ok {
		return p.pg
	}
	return nil
}

// Target gives the faults the cluster: its links' faults name it
// nemesis.PGNode, and so do the kinds that stop or restart it
// (nemesis.Kind.OnPostgres).
func (s *postgresServers) Target(t *nemesis.Target) {
	t.Postgres = s.pg
	t.Servers[nemesis.PGNode] = s.pg
}

// Connect gives the lock its connection string through the client's link
// pg (to pgbouncer, when there is one).
func (s *postgresServers) Connect(cfg *clients.Config, link Link) error {
	server, dsn := s.pg.Addr(), s.pg.DSN
	if s.pgb != nil {
		server, dsn = s.pgb.Addr(), s.pgb.DSN
	}
	addr, err := link(nemesis.PGNode, server)
	if err != nil {
		return err
	}
	cfg.Postgres = dsn(addr)
	return nil
}

func (s *postgresServers) Describe() string {
	d := "PostgreSQL " + versioned(env.PostgresVersion()) + "on " + s.pg.Addr()
	if s.pgb != nil {
		d += fmt.Sprintf(" behind pgbouncer %s(pool_mode=%s, %d server connection(s)) on %s", versioned(env.PgbouncerVersion()), s.poolMode, s.pgb.PoolSize(), s.pgb.Addr())
	}
	return d
}

// Reset does nothing: an advisory lock dies with the session that held
// it, and the storage's reset is the run's (storage.Reset).
func (s *postgresServers) Reset(context.Context) error { return nil }

func (s *postgresServers) Close() {
	if s.pgb != nil {
		s.pgb.Stop()
	}
	s.pg.Stop()
}
