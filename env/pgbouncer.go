package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrPgbouncerNotFound says the pgbouncer binary is not installed.
var ErrPgbouncerNotFound = errors.New("pgbouncer not found: apt-get install pgbouncer")

// PgbouncerOptions tunes a pgbouncer in front of a Postgres.
type PgbouncerOptions struct {
	// PoolMode is pgbouncer's pool_mode: "transaction" (a server
	// connection is a client's only for the length of a transaction, or
	// of one statement outside any) or "session" (for as long as the
	// client stays connected). "" means "transaction".
	PoolMode string
	// PoolSize is default_pool_size: how many server connections the
	// pool for the one database/user pair may hold. Zero means 1.
	PoolSize int
	// StartTimeout bounds start-up. Zero means 10s.
	StartTimeout time.Duration
}

// PgbouncerQueryWait is query_wait_timeout: how long a client waits for
// a server connection before pgbouncer gives up and closes it. pgbouncer
// ships 120 s; a lock whose lease is an open transaction (postgres-xact)
// keeps the pool's one server connection, and the next client's acquire
// would hang for two minutes, past the harness's bound on a reply. 5 s
// is far longer than any story's wait for a free server connection.
const PgbouncerQueryWait = 5 * time.Second

// Pgbouncer is one pgbouncer listening on 127.0.0.1 in front of a
// Postgres the harness started, run by the harness and killed with it.
type Pgbouncer struct {
	dir  string // config, auth file and log; removed by Stop
	port int
	opts PgbouncerOptions
	proc *Proc
	log  string
}

// pgbouncerBin finds the pgbouncer binary: on PATH, else where Debian
// puts it (/usr/sbin, which a non-root PATH often lacks).
func pgbouncerBin() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/local/bin/pgbouncer"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", ErrPgbouncerNotFound
}

// Config and auth file names, relative to the pgbouncer's dir (its
// working directory): pgbouncer's config parser takes no quoting, so
// relative names keep any dir name out of the config.
const (
	pgbouncerIni   = "pgbouncer.ini"
	pgbouncerUsers = "userlist.txt"
	pgbouncerLog   = "pgbouncer.log"
)

// StartPgbouncer starts pgbouncer on a free port of 127.0.0.1 in front of
// pg, for database postgres and user postgres (trust authentication, as
// pg's pg_hba has), with the pool mode and size of o. Its config, auth
// file and log live in dir (created if missing, and removed by Stop,
// contents and all; "" means a new temp dir that Cleanup also removes);
// it has no unix socket and no admin console. It runs as the user
// PostgreSQL runs as (the postgres system user when the harness is root:
// pgbouncer too refuses to run as root), in its own process group, and
// dies with the harness. It returns once a query through it is answered.
func StartPgbouncer(ctx context.Context, pg *Postgres, dir string, o PgbouncerOptions) (b *Pgbouncer, err error) {
	if pg == nil || pg.proc == nil || pg.proc.Exited() {
		return nil, errors.New("pgbouncer: the postgres behind it is not running")
	}
	switch o.PoolMode {
	case "":
		o.PoolMode = "transaction"
	case "transaction", "session":
	default:
		return nil, fmt.Errorf("pgbouncer: pool mode %q: want transaction or session", o.PoolMode)
	}
	if o.PoolSize < 0 {
		return nil, fmt.Errorf("pgbouncer: negative pool size %d", o.PoolSize)
	}
	if o.PoolSize == 0 {
		o.PoolSize = 1
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	bin, err := pgbouncerBin()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()

	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if dir, err = dirOrTemp(dir, TempDir, "locksim-pgbouncer-"); err != nil {
		return nil, err
	}
	b = &Pgbouncer{dir: dir, opts: o, log: filepath.Join(dir, pgbouncerLog)}
	defer func() {
		if err != nil {
			b.Stop() // also removes dir
			b = nil
		}
	}()
	if cred != nil {
		if err := makeReachable(dir); err != nil {
			return b, err
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return b, fmt.Errorf("chown %s to postgres: %v", dir, err)
		}
	}
	// trust: pgbouncer checks only that the user is listed.
	if err := writeOwned(filepath.Join(dir, pgbouncerUsers), "\"postgres\" \"\"\n", cred); err != nil {
		return b, err
	}

	err = onFreePort(ctx, func(port int) error {
		b.port = port
		return clash(b.start(ctx, bin, pg, cred), "Address already in use")
	})
	return b, err
}

// writeOwned writes a file that the user cred names (nil: this process's
// user) owns.
func writeOwned(path, content string, cred *syscall.Credential) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown %s to postgres: %v", path, err)
		}
	}
	return nil
}

func (b *Pgbouncer) config(pg *Postgres) string {
	return fmt.Sprintf(`[databases]
postgres = host=127.0.0.1 port=%d dbname=postgres user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
logfile = %s
pidfile =
pool_mode = %s
default_pool_size = %d
min_pool_size = 0
reserve_pool_size = 0
query_wait_timeout = %d
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
`, pg.port, b.port, pgbouncerUsers, pgbouncerLog, b.opts.PoolMode, b.opts.PoolSize, int(PgbouncerQueryWait/time.Second))
}

func (b *Pgbouncer) start(ctx context.Context, bin string, pg *Postgres, cred *syscall.Credential) error {
	if err := writeOwned(filepath.Join(b.dir, pgbouncerIni), b.config(pg), cred); err != nil {
		return err
	}
	// pgbouncer appends to its logfile; its stderr (-q: only what comes
	// before the logfile is open, "cannot open logfile" say) appends to
	// the same file.
	logf, err := os.OpenFile(b.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if cred != nil {
		_ = logf.Chown(int(cred.Uid), int(cred.Gid))
	}
	cmd := exec.Command(bin, "-q", pgbouncerIni)
	cmd.Dir = b.dir
	cmd.Env = pgEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	proc, err := StartProc("pgbouncer", cmd)
	if err != nil {
		return err
	}
	b.proc = proc

	// Wait until a query through it is answered: pgbouncer listens, and
	// reaches the server only for a client.
	return waitQuery(ctx, b.DSN(b.Addr()), proc, logTail(b.log),
		"pgbouncer exited at start-up", fmt.Sprintf("pgbouncer did not answer a query within %v", b.opts.StartTimeout))
}

// Addr is host:port of pgbouncer on 127.0.0.1.
func (b *Pgbouncer) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
}

// Dir is the pgbouncer's dir (pgbouncer.ini, userlist.txt, pgbouncer.log).
func (b *Pgbouncer) Dir() string { return b.dir }

// Pid is pgbouncer's pid (also its process group).
func (b *Pgbouncer) Pid() int {
	if b.proc == nil {
		return 0
	}
	return b.proc.Pid()
}

// DSN is a connection string to database postgres as user postgres at
// addr (host:port: Addr, or a toxiproxy proxy in front of it), as
// Postgres.DSN. It asks pgx for the simple protocol
// (default_query_exec_mode=simple_protocol, which pgx reads and does not
// send): pgbouncer 1.18 in transaction mode does not keep a client's
// prepared statements, which pgx's default mode relies on.
func (b *Pgbouncer) DSN(addr string) string {
	return postgresDSN(addr, "default_query_exec_mode=simple_protocol")
}

// Stop shuts pgbouncer down (SIGTERM, its immediate shutdown, which
// closes every client and server connection; SIGKILL to its group after
// 2s) and removes its dir.
func (b *Pgbouncer) Stop() {
	if b == nil {
		return
	}
	if b.proc != nil {
		stopGently(b.proc, syscall.SIGTERM, 2*time.Second)
	}
	if b.dir != "" {
		RemoveTempDir(b.dir)
	}
}

// PoolSize is the number of server connections pgbouncer may open.
func (b *Pgbouncer) PoolSize() int { return b.opts.PoolSize }
