package clients

// migrate: the lock of github.com/golang-migrate/migrate/v4's postgres
// driver, which guards a schema migration run with a session advisory
// lock: pg_advisory_lock, which waits, on the one *sql.Conn the driver
// holds.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "migrate", Like: "postgres-session", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true,
		Promises: migratePromises,
		OneLock:  "golang-migrate keys its lock by the database, schema and migrations table, one migration run at a time per database",
		Doc:      "golang-migrate/migrate v4.20.1's postgres driver Lock/Unlock: pg_advisory_lock (it waits) on the driver's one connection, keyed by database, schema and migrations table",
		New:      func(cfg Config) (Lock, error) { return NewMigrate(cfg) }})
}

// migrateWait is how long, at least, Migrate lets the library's
// pg_advisory_lock wait before it reads the wait as a lock held
// elsewhere (5 node timeouts: 1s by default).
func migrateWait(cfg Config) time.Duration { return max(time.Second, 5*cfg.Timeout()) }

// Migrate is a thin adapter over golang-migrate's postgres driver (read
// in its source at v4.20.1, database/postgres/postgres.go and
// database/util.go). What the library does:
//
//   - The driver holds one *sql.Conn for its life; Lock runs SELECT
//     pg_advisory_lock($1) and Unlock SELECT pg_advisory_unlock($1) on it,
//     each with context.Background() (nothing bounds or cancels them), and
//     a flag (isLocked) makes a second Lock of one driver fail at once
//     with database.ErrLocked, sending nothing.
//   - The key is database.GenerateAdvisoryLockId(database, schema,
//     migrations table): a CRC-32 of the three names times a salt, so one
//     lock per migrations table, whatever the caller calls its lock. Here
//     the database is the connection's (postgres), the schema its
//     current_schema() (public) and the table the library's default,
//     schema_migrations: the story's key names the lease, not the lock.
//     Every client of a story takes the same lock.
//   - Unlock does not read pg_advisory_unlock's answer: false (this
//     session did not hold it) is success.
//   - Building the driver (WithConnection) creates the migrations table
//     if missing, under the same lock (Lock, then Unlock).
//
// The connection is pgx's database/sql driver (github.com/jackc/pgx/v5/
// stdlib) on the story's connection string, not lib/pq (which the
// driver's package imports): the SQL is the library's, sent the way
// locksim's other PostgreSQL locks send theirs (the simple protocol
// through pgbouncer). The adapter takes the connection itself (db.Conn)
// and hands it to postgres.WithConnection, as WithInstance does.
//
// The harness's acquire tries once; the library has no try, only a Lock
// that waits. Acquire lets Lock wait up to migrateWait (1s): granted in
// that time, the lease; still waiting, the lock is held by another
// session, and the acquire is refused (held); a server that slow would
// read the same. The wait cannot be cancelled through the library, so
// the adapter closes the driver's connection under it (the session goes,
// and its queued request with it) and retires the driver; the next
// acquire builds a new one, as the next deployment's migrate would. Any
// other failure of Lock or Unlock (a broken connection) is an unknown
// outcome and retires the driver too. A Lock of a client that already
// holds the lock is the library's ErrLocked: refused (held), nothing
// sent.
//
// What the lease says: Token a random token of the adapter's (the
// library has none), Fence 0, Validity 0 (a session lock). Release of
// a lease this client does not hold is refused not-held, nothing sent;
// otherwise it is the library's Unlock, bounded by migrateWait (an
// Unlock still waiting is an unknown outcome). Extend sends nothing
// (Spec.LocalExtend): the lease, unless its driver was retired.
type Migrate struct {
	dsn  string
	wait time.Duration

	mu    sync.Mutex
	drv   *migrateDriver // nil: none built, or retired
	token string         // the held lease's, "" when none
	held  *migrateDriver // the driver the lease was granted on
}

// migrateDriver is one built driver and the network connection under
// its *sql.Conn, which the adapter closes to stop a call that waits.
type migrateDriver struct {
	pg   *postgres.Postgres
	net  net.Conn
	db   *sql.DB
	once sync.Once
}

// retire closes the driver's connection under whatever call it waits
// in, then closes the driver (in the background: it waits for that call
// to return).
func (d *migrateDriver) retire() {
	d.once.Do(func() {
		_ = d.net.Close()
		go func() {
			_ = d.pg.Close()
			_ = d.db.Close()
		}()
	})
}

// NewMigrate makes the adapter; it connects when warmed or on the first
// acquire.
func NewMigrate(cfg Config) (*Migrate, error) {
	dsn, err := pgParse("migrate", cfg)
	if err != nil {
		return nil, err
	}
	return &Migrate{dsn: dsn, wait: migrateWait(cfg)}, nil
}

// errStillWaiting says a call of the library's was still waiting when
// its bound passed.
var errStillWaiting = errors.New("still waiting")

// bounded runs f in its own goroutine and waits up to d, or until ctx
// ends, for it: errStillWaiting (or ctx's error) when f had not returned,
// and f runs on.
func bounded(ctx context.Context, d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errStillWaiting
	case <-ctx.Done():
		return ctx.Err()
	}
}

// build connects and builds a driver with the library's defaults
// (postgres.WithConnection, which takes and gives back the lock to
// create its table). Callers hold m.mu.
func (m *Migrate) build(ctx context.Context) (*migrateDriver, error) {
	db, err := sql.Open("pgx", m.dsn)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	db.SetMaxOpenConns(1)
	cctx, cancel := context.WithTimeout(ctx, m.wait)
	defer cancel()
	conn, err := db.Conn(cctx)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	d := &migrateDriver{db: db}
	if err := conn.Raw(func(c any) error {
		sc, ok := c.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("a %T, not pgx's", c)
		}
		d.net = sc.Conn().PgConn().Conn()
		return nil
	}); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return nil, fmt.Errorf("migrate: the connection: %w", err)
	}
	var pg *postgres.Postgres
	err = bounded(ctx, m.wait, func() (err error) {
		pg, err = postgres.WithConnection(context.Background(), conn, &postgres.Config{})
		return err
	})
	if err != nil {
		_ = d.net.Close() // a WithConnection still waiting returns
		go func() { _ = conn.Close(); _ = db.Close() }()
		if errors.Is(err, errStillWaiting) {
			return nil, Refuse(ErrNotAcquired, history.ReasonHeld,
				"the driver's set-up (WithConnection takes the lock to create its table) waited %v: another session holds the lock", m.wait)
		}
		return nil, fmt.Errorf("migrate: WithConnection: %w", err)
	}
	d.pg = pg
	return d, nil
}

// driver returns the current driver, building one if none. Callers hold
// m.mu.
func (m *Migrate) driver(ctx context.Context) (*migrateDriver, error) {
	if m.drv == nil {
		d, err := m.build(ctx)
		if err != nil {
			return nil, err
		}
		m.drv = d
	}
	return m.drv, nil
}

// retire retires driver d, the current one or an older one. Callers
// hold m.mu.
func (m *Migrate) retire(d *migrateDriver) {
	d.retire()
	if m.drv == d {
		m.drv = nil
	}
}

// Warm builds the driver before the story starts.
func (m *Migrate) Warm(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.driver(ctx)
	return err
}

// Acquire implements Lock: the library's Lock, let wait up to
// migrateWait; ttl is ignored.
func (m *Migrate) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := Monotonic()
	d, err := m.driver(ctx)
	if err != nil {
		return Lease{}, err
	}
	err = bounded(ctx, m.wait, d.pg.Lock)
	switch {
	case err == nil:
	case errors.Is(err, database.ErrLocked):
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "this client's driver holds the lock already: %v (nothing sent)", err)
	case errors.Is(err, errStillWaiting):
		m.retire(d)
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld,
			"pg_advisory_lock waited %v: another session holds the lock (the driver's connection closed under it)", m.wait)
	default:
		m.retire(d)
		return Lease{}, fmt.Errorf("migrate acquire: %w", err)
	}
	m.token, m.held = NewToken(), d
	return Lease{Key: key, Token: m.token, Start: start}, nil
}

// Release implements Lock: the library's Unlock, on the driver that
// took the lock.
func (m *Migrate) Release(ctx context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token == "" || l.Token != m.token {
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "this client holds no lease %q (nothing sent)", l.Token)
	}
	d := m.held
	m.token, m.held = "", nil
	if m.drv != d {
		return errors.New("migrate release: the driver that took the lock was retired (its connection closed; the server frees a closed session's locks once it notices)")
	}
	if err := bounded(ctx, m.wait, d.pg.Unlock); err != nil {
		m.retire(d)
		return fmt.Errorf("migrate release: %w", err)
	}
	return nil
}

// Extend sends nothing: the lease, unless its driver was retired.
func (m *Migrate) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token == "" || l.Token != m.token {
		return Lease{}, ErrNotHeld
	}
	if m.drv != m.held {
		return Lease{}, errors.New("migrate extend: the driver that took the lock was retired")
	}
	return l, nil
}

// Close retires the driver: its connection closes, and the server frees
// its session's locks.
func (m *Migrate) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drv != nil {
		m.retire(m.drv)
	}
	m.token, m.held = "", nil
	return nil
}
