package nemesis

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/env"
)

// TestCrashRestartPersistence: kill -9 and restart at once. With
// persistence none the key written before the crash is gone; with AOF
// always it is kept.
func TestCrashRestartPersistence(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	for _, tc := range []struct {
		p    env.Persistence
		kept bool
	}{{env.PersistNone, false}, {env.PersistAlways, true}} {
		t.Run(string(tc.p), func(t *testing.T) {
			r := startRedis(t, env.RedisOptions{Name: "A", Persistence: tc.p})
			tg := &Target{Redis: map[string]*env.Redis{"A": r}}
			ctx := ctxT(t, 10*time.Second)
			c := r.Client()
			if err := c.Set(ctx, "lock", "client1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			pid := r.Proc().Pid()
			f := &Crash{Node: "A"}
			inject(t, f, tg)
			if r.Proc().Pid() == pid || !r.Running() {
				t.Fatal("the server was not killed and restarted")
			}
			v, err := c.Get(ctx, "lock").Result()
			switch {
			case tc.kept && (err != nil || v != "client1"):
				t.Fatalf("fsynced key after crash: %q, %v; want kept", v, err)
			case !tc.kept && err != redis.Nil:
				t.Fatalf("unsynced key after crash: %q, %v; want lost", v, err)
			}
			heal(t, f, tg)
		})
	}
}

// TestCrashDelayedRestart: with RestartAfter 2s, Inject returns at once
// and the server is down; Heal cuts the delay short and returns with the
// server running (well before the 2s). NoRestart: down until Heal.
func TestCrashDelayedRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	tg := &Target{Redis: map[string]*env.Redis{"A": r}}
	for _, f := range []*Crash{{Node: "A", RestartAfter: 2 * time.Second}, {Node: "A", NoRestart: true}} {
		t0 := time.Now()
		inject(t, f, tg)
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Fatalf("%s: Inject took %v", f.Detail(), d)
		}
		time.Sleep(100 * time.Millisecond)
		if r.Running() {
			t.Fatalf("%s: running 100ms after the kill", f.Detail())
		}
		heal(t, f, tg)
		if !r.Running() || time.Since(t0) > 1500*time.Millisecond {
			t.Fatalf("%s: after heal running=%v at %v", f.Detail(), r.Running(), time.Since(t0))
		}
		if err := r.Client().Ping(ctxT(t, 3*time.Second)).Err(); err != nil {
			t.Fatalf("%s: after heal: %v", f.Detail(), err)
		}
	}
}

// TestCrashRestartsPostgres: a crash aimed at node pg kills PostgreSQL
// (kill -9 to the postmaster's group) and restarts it at once on the same
// port: the holder's session is gone, and with it its advisory lock, which
// a new session takes; the holder hears of it only at its next command.
func TestCrashRestartsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	pg := startPG(t)
	ctx := ctxT(t, 30*time.Second)
	holder := pgConnect(t, pg, pg.Addr())
	if ok, err := tryLock(ctx, holder, 9); err != nil || !ok {
		t.Fatalf("holder: %v %v, want the lock", ok, err)
	}
	before := pg.Pid()
	tg := &Target{Postgres: pg, Servers: map[string]Server{PGNode: pg}}
	f := &Crash{Node: PGNode}
	inject(t, f, tg)
	if !pg.Running() || pg.Pid() == before {
		t.Fatalf("after the crash: running %v, postmaster %d (was %d); want a new one", pg.Running(), pg.Pid(), before)
	}
	other := pgConnect(t, pg, pg.Addr())
	if ok, err := tryLock(ctx, other, 9); err != nil || !ok {
		t.Fatalf("a new session after the restart: %v %v, want the lock (the holder's went with its session)", ok, err)
	}
	if _, err := holder.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("the holder's connection still answers after the restart")
	}
	heal(t, f, tg)
}
