package nemesis

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/env"
)

// TestDiskLossEmptiesRedis: a key written with appendfsync always
// survives a kill -9 (Crash) and is gone after a disk-loss, which
// restarts the node at once. Without the loss of the files the second
// case fails.
func TestDiskLossEmptiesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	for _, tc := range []struct {
		name  string
		fault Breaker
		kept  bool
	}{
		{"kill -9", &Crash{Node: "A"}, true},
		{"disk loss", &DiskLoss{Node: "A"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRedis(t, env.RedisOptions{Name: "A", Persistence: env.PersistAlways})
			tg := &Target{Redis: map[string]*env.Redis{"A": r}}
			ctx := ctxT(t, 20*time.Second)
			c := r.Client()
			if err := c.Set(ctx, "k", "1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			inject(t, tc.fault, tg)
			if !r.Running() {
				t.Fatal("the server did not restart")
			}
			v, err := c.Get(ctx, "k").Result()
			switch {
			case tc.kept && (err != nil || v != "1"):
				t.Fatalf("the key after %s: %q, %v; want kept", tc.name, v, err)
			case !tc.kept && err != redis.Nil:
				t.Fatalf("the key after %s: %q, %v; want lost", tc.name, v, err)
			}
			heal(t, tc.fault, tg)
		})
	}
}
