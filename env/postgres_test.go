package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func startPG(t *testing.T, dir string, o PostgresOptions) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	pg, err := StartPostgres(ctx, dir, o)
	if errors.Is(err, ErrPostgresNotFound) {
		t.Fatalf("%v (make test installs it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres on %s started in %v", pg.Addr(), time.Since(t0))
	t.Cleanup(pg.Stop)
	return pg
}

func pgConnect(t *testing.T, pg *Postgres) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.DSN(pg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// heldAndRefused opens two sessions: the first takes advisory lock key,
// the second is refused it.
func heldAndRefused(t *testing.T, pg *Postgres, key int64) (c1, c2 *pgx.Conn) {
	t.Helper()
	c1, c2 = pgConnect(t, pg), pgConnect(t, pg)
	if ok, err := tryAdvisory(t, c1, key); err != nil || !ok {
		t.Fatalf("first session: got %v, %v; want the lock", ok, err)
	}
	if ok, err := tryAdvisory(t, c2, key); err != nil || ok {
		t.Fatalf("second session: got %v, %v; want refused", ok, err)
	}
	return c1, c2
}

func tryAdvisory(t *testing.T, c *pgx.Conn, key int64) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ok bool
	err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}

// TestPostgresStartLockResetStop starts a cluster in a dir inside a 0700
// dir (as the harness's run dir is), takes an advisory lock, checks that
// Reset frees it and makes the tables, and that Stop leaves no process
// and no dir.
func TestPostgresStartLockResetStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	dir := filepath.Join(t.TempDir(), "pg")
	pg := startPG(t, dir, PostgresOptions{})
	c1, _ := heldAndRefused(t, pg, 42)

	ctx := context.Background()
	if err := pg.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tryAdvisory(t, c1, 43); err == nil {
		t.Fatal("a terminated session still answers")
	}
	c3 := pgConnect(t, pg)
	if ok, err := tryAdvisory(t, c3, 42); err != nil || !ok {
		t.Fatalf("after Reset: got %v, %v; want the lock (holder terminated)", ok, err)
	}
	var v, f int64
	if err := c3.QueryRow(ctx, `SELECT value, fence FROM counter WHERE id = 1`).Scan(&v, &f); err != nil || v != 0 || f != 0 {
		t.Fatalf("counter after Reset: %d %d %v", v, f, err)
	}

	pgid := pg.Pid()
	pg.Stop()
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d still has processes after Stop (kill: %v)", pgid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s left after Stop: %v", dir, err)
	}
}

// TestPostgresIdleSessionTimeout: the server ends an idle holder's session,
// and with it the lock, with no word to the holder.
func TestPostgresIdleSessionTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	pg := startPG(t, "", PostgresOptions{IdleSessionTimeout: 200 * time.Millisecond})
	dir := pg.Dir()
	c1 := pgConnect(t, pg)
	if ok, err := tryAdvisory(t, c1, 7); err != nil || !ok {
		t.Fatalf("got %v, %v", ok, err)
	}
	time.Sleep(500 * time.Millisecond)
	c2 := pgConnect(t, pg)
	if ok, err := tryAdvisory(t, c2, 7); err != nil || !ok {
		t.Fatalf("after the idle timeout: got %v, %v; want the lock", ok, err)
	}
	if _, err := tryAdvisory(t, c1, 8); err == nil {
		t.Fatal("the timed-out session still answers")
	}
	pg.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s left after Stop", dir)
	}
}

// TestMain removes what the package's tests leave for Cleanup (the
// initdb template, temp dirs, any process still running).
func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
