package nemesis

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/env"
)

// TestPowerLossCutsWhatWasNotSynced: a key Redis synced survives a power
// loss, and one it wrote but did not sync (appendfsync no, set at run
// time, after the first key's sync) is gone; a kill -9 of the same keeps
// both (the page cache survives a process). With appendfsync always
// every acknowledged key survives, and nothing is cut. A clean shutdown
// (SHUTDOWN, then the same power-off) keeps the unsynced key too: Redis
// syncs its append-only file before it exits, and the cut takes nothing.
func TestPowerLossCutsWhatWasNotSynced(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	for _, tc := range []struct {
		name     string
		p        env.Persistence
		fault    func() Breaker
		unsynced bool // the second key is written with appendfsync no
		kept     bool // the second key survives
	}{
		{"power loss, unsynced", env.PersistEverysec, func() Breaker { return NewPowerLoss("A", 0) }, true, false},
		{"kill -9, unsynced", env.PersistEverysec, func() Breaker { return &Crash{Node: "A"} }, true, true},
		{"power loss, always", env.PersistAlways, func() Breaker { return NewPowerLoss("A", 0) }, false, true},
		{"clean shutdown, unsynced", env.PersistEverysec, func() Breaker { return NewShutdown("A", 0) }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRedis(t, env.RedisOptions{Name: "A", Persistence: tc.p})
			tg := &Target{Redis: map[string]*env.Redis{"A": r}}
			ctx := ctxT(t, 20*time.Second)
			c := r.Client()
			if err := c.Set(ctx, "first", "1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if tc.unsynced {
				// everysec syncs a write within a second or so of it.
				time.Sleep(2500 * time.Millisecond)
				if err := c.ConfigSet(ctx, "appendfsync", "no").Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Set(ctx, "second", "2", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			f := tc.fault()
			inject(t, f, tg)
			if !r.Running() {
				t.Fatal("the server did not restart")
			}
			if v, err := c.Get(ctx, "first").Result(); err != nil || v != "1" {
				t.Fatalf("the synced key after the fault: %q, %v; want kept", v, err)
			}
			v, err := c.Get(ctx, "second").Result()
			switch {
			case tc.kept && (err != nil || v != "2"):
				t.Fatalf("the second key after the fault: %q, %v; want kept", v, err)
			case !tc.kept && err != redis.Nil:
				t.Fatalf("the unsynced key after the power loss: %q, %v; want lost", v, err)
			}
			switch f := f.(type) {
			case *PowerLoss:
				if lost := f.lost.Load(); tc.unsynced != (lost > 0) || !strings.Contains(f.Detail(), "bytes lost") {
					t.Errorf("%s: %d bytes cut (%s)", tc.name, lost, f.Detail())
				}
			case *Shutdown:
				if lost := f.lost.Load(); lost != 0 || !strings.Contains(f.Detail(), "(0 bytes lost)") {
					t.Errorf("%s: %d bytes cut after the shutdown's sync (%s)", tc.name, lost, f.Detail())
				}
			}
			heal(t, f, tg)
		})
	}
}
