package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func startBouncer(t *testing.T, pg *Postgres, dir string, o PgbouncerOptions) *Pgbouncer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	b, err := StartPgbouncer(ctx, pg, dir, o)
	if errors.Is(err, ErrPgbouncerNotFound) {
		t.Fatalf("%v (CI installs it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pgbouncer (%s, pool %d) on %s started in %v", o.PoolMode, o.PoolSize, b.Addr(), time.Since(t0))
	t.Cleanup(b.Stop)
	return b
}

// bouncerConnect opens a pgx connection through b in the simple protocol.
func bouncerConnect(t *testing.T, b *Pgbouncer) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(b.DSN(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultQueryExecMode != pgx.QueryExecModeSimpleProtocol {
		t.Fatalf("DSN gives exec mode %v; want the simple protocol", cfg.DefaultQueryExecMode)
	}
	if _, sent := cfg.RuntimeParams["default_query_exec_mode"]; sent {
		t.Fatal("pgx would send default_query_exec_mode to the server")
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func queryOne[T any](t *testing.T, c *pgx.Conn, sql string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var v T
	if err := c.QueryRow(ctx, sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// assertBouncerGone stops b and checks that no process and no dir is left.
func assertBouncerGone(t *testing.T, b *Pgbouncer) {
	t.Helper()
	pid, dir := b.Pid(), b.Dir()
	b.Stop()
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d still has processes after Stop (kill: %v)", pid, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pgbouncer %d still runs after Stop (kill: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s left after Stop: %v", dir, err)
	}
}

// TestPgbouncerTransactionModeSharesSession: with pool_mode transaction
// and one server connection, two clients share one server session, so a
// session advisory lock one takes is granted to the other too (advisory
// locks are reentrant within a session), and a client of PostgreSQL
// itself is refused it. Then session mode with two server connections
// gives each client its own session, and the second is refused.
func TestPgbouncerTransactionModeSharesSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL and pgbouncer")
	}
	pg := startPG(t, "", PostgresOptions{})

	b := startBouncer(t, pg, "", PgbouncerOptions{PoolMode: "transaction", PoolSize: 1})
	if !strings.HasPrefix(filepath.Base(b.Dir()), "locksim-pgbouncer-o") {
		t.Fatalf("temp dir %s is not named for Reap", b.Dir())
	}
	c1, c2 := bouncerConnect(t, b), bouncerConnect(t, b)
	if !queryOne[bool](t, c1, `select pg_try_advisory_lock(42)`) {
		t.Fatal("transaction mode, client 1: lock refused")
	}
	if !queryOne[bool](t, c2, `select pg_try_advisory_lock(42)`) {
		t.Fatal("transaction mode, client 2: lock refused; want it granted (the same server session)")
	}
	p1 := queryOne[int32](t, c1, `select pg_backend_pid()`)
	p2 := queryOne[int32](t, c2, `select pg_backend_pid()`)
	if p1 != p2 {
		t.Fatalf("transaction mode, pool 1: backend pids %d and %d; want one", p1, p2)
	}
	direct := pgConnect(t, pg)
	if queryOne[bool](t, direct, `select pg_try_advisory_lock(42)`) {
		t.Fatal("a direct session got the lock the pooled session holds")
	}
	c1.Close(context.Background())
	c2.Close(context.Background())
	assertBouncerGone(t, b)

	// The pooled session ended with pgbouncer, and its lock with it.
	deadline := time.Now().Add(5 * time.Second)
	for !queryOne[bool](t, direct, `select pg_try_advisory_lock(42)`) {
		if time.Now().After(deadline) {
			t.Fatal("lock 42 still held 5s after pgbouncer stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	queryOne[bool](t, direct, `select pg_advisory_unlock(42)`)

	// A dir named by the caller, inside a 0700 dir (as the harness's run
	// dir is).
	dir := filepath.Join(t.TempDir(), "bouncer")
	b = startBouncer(t, pg, dir, PgbouncerOptions{PoolMode: "session", PoolSize: 2})
	if b.Dir() != dir {
		t.Fatalf("dir %s; want %s", b.Dir(), dir)
	}
	c1, c2 = bouncerConnect(t, b), bouncerConnect(t, b)
	if !queryOne[bool](t, c1, `select pg_try_advisory_lock(42)`) {
		t.Fatal("session mode, client 1: lock refused")
	}
	if queryOne[bool](t, c2, `select pg_try_advisory_lock(42)`) {
		t.Fatal("session mode, pool 2, client 2: lock granted; want refused")
	}
	p1 = queryOne[int32](t, c1, `select pg_backend_pid()`)
	p2 = queryOne[int32](t, c2, `select pg_backend_pid()`)
	if p1 == p2 {
		t.Fatalf("session mode, pool 2: both clients on backend %d", p1)
	}
	assertBouncerGone(t, b)
}

// TestPgbouncerStartTime starts and stops pgbouncer a few times, logs the
// median start time, and checks each Stop leaves nothing.
func TestPgbouncerStartTime(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL and pgbouncer")
	}
	pg := startPG(t, "", PostgresOptions{})
	var ds []time.Duration
	for i := 0; i < 7; i++ {
		t0 := time.Now()
		b, err := StartPgbouncer(context.Background(), pg, "", PgbouncerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		assertBouncerGone(t, b)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	t.Logf("pgbouncer start times %v; median %v", ds, ds[len(ds)/2])
}

// TestPgbouncerStartFailure: a pgbouncer that cannot reach its server
// fails to start within its timeout, with its log's last lines in the
// error, and leaves no process and no dir.
func TestPgbouncerStartFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL and pgbouncer")
	}
	pg := startPG(t, "", PostgresOptions{})
	if _, err := StartPgbouncer(context.Background(), pg, "", PgbouncerOptions{PoolMode: "statement"}); err == nil {
		t.Fatal("statement mode accepted")
	}
	before := LiveCount()
	// The server stops answering (SIGSTOP to its whole group) but stays,
	// so the check that pg runs passes.
	if err := pg.proc.Freeze(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.proc.Thaw() }()
	dir := filepath.Join(t.TempDir(), "bouncer")
	_, err := StartPgbouncer(context.Background(), pg, dir, PgbouncerOptions{StartTimeout: time.Second})
	if err == nil {
		t.Fatal("started in front of a stopped server")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "did not answer a query within") || !strings.Contains(err.Error(), "kernel file descriptor limit") {
		t.Fatalf("error lacks the log's last lines: %v", err)
	}
	if n := LiveCount(); n != before {
		t.Fatalf("%d processes live after the failed start; want %d", n, before)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s left after the failed start: %v", dir, err)
	}
}
