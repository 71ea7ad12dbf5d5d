package nemesis

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/env"
)

// TestClockJumpExpiresKey: a +60s ClockJump on a server moves its TIME by
// 60s (±2s) and expires a 30s key at once; Heal brings TIME back.
func TestClockJumpExpiresKey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	tg := &Target{Redis: map[string]*env.Redis{"A": r}}
	ctx := ctxT(t, 10*time.Second)
	c := r.Client()
	if ok, err := c.SetNX(ctx, "lock", "client1", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	before := redisTime(t, r)
	f := &ClockJump{Node: "A", By: 60 * time.Second}
	inject(t, f, tg)
	after := redisTime(t, r)
	if d := after.Sub(before); d < 58*time.Second || d > 62*time.Second {
		t.Fatalf("TIME moved by %v, want 60s ±2s", d)
	}
	if _, err := c.Get(ctx, "lock").Result(); err != redis.Nil {
		t.Fatalf("the 30s key survived a 60s jump: err %v", err)
	}
	if ok, err := c.SetNX(ctx, "lock", "client2", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("second SET NX after the jump: %v %v; want the lock", ok, err)
	}
	heal(t, f, tg)
	if d := redisTime(t, r).Sub(time.Now()); d < -2*time.Second || d > 2*time.Second {
		t.Fatalf("after heal TIME is %v off the real clock", d)
	}
}

// TestClockDriftRate: at Rate 1.5, Redis TIME advances 1.5s (±0.05s) per
// real second, measured over ~1s; Heal restores real time (±0.1s).
func TestClockDriftRate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	tg := &Target{Redis: map[string]*env.Redis{"A": r}}
	f := &ClockDrift{Node: "A", Rate: 1.5}
	inject(t, f, tg)
	real0, t0 := time.Now(), redisTime(t, r)
	time.Sleep(time.Second)
	real1, t1 := time.Now(), redisTime(t, r)
	rate := float64(t1.Sub(t0)) / float64(real1.Sub(real0))
	if math.Abs(rate-1.5) > 0.05 {
		t.Fatalf("TIME advanced at x%.3f, want x1.5 ±0.05", rate)
	}
	heal(t, f, tg)
	if d := redisTime(t, r).Sub(time.Now()); d < -100*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("after heal TIME is %v off the real clock, want ±0.1s", d)
	}
	// Composes with a jump: the drift's heal leaves the jump in force.
	j := &ClockJump{Node: "A", By: 10 * time.Second}
	inject(t, j, tg)
	d2 := &ClockDrift{Node: "A", Rate: 3}
	inject(t, d2, tg)
	time.Sleep(200 * time.Millisecond)
	heal(t, d2, tg)
	if d := redisTime(t, r).Sub(time.Now()); d < 9900*time.Millisecond || d > 10100*time.Millisecond {
		t.Fatalf("jump +10s then drift healed: TIME is %v off, want 10s ±0.1s", d)
	}
	heal(t, j, tg)
}

// TestClockJumpOnAClient: a client's wall clock (the control file its
// worker reads) moves by the jump and back on heal; a client this run did
// not start is refused.
func TestClockJumpOnAClient(t *testing.T) {
	clock, err := clockshim.NewControl(filepath.Join(t.TempDir(), "client-1.clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer clock.Close()
	tg := &Target{ClientClocks: map[int]*clockshim.Control{1: clock}}
	f := &ClockJump{Client: 1, By: -2 * time.Second}
	inject(t, f, tg)
	if skew := time.Until(clock.Now()); skew > -1900*time.Millisecond || skew < -2100*time.Millisecond {
		t.Fatalf("client clock is %v from real time, want -2s ± 100ms", skew)
	}
	heal(t, f, tg)
	if skew := time.Until(clock.Now()); skew < -100*time.Millisecond || skew > 100*time.Millisecond {
		t.Fatalf("after heal the client clock is %v from real time, want 0 ± 100ms", skew)
	}
	if err := (&ClockJump{Client: 2, By: time.Second}).Inject(context.Background(), tg); err == nil {
		t.Fatal("a clock jump on a client of another run was not refused")
	}
	if err := (&ClockJump{Node: "A", Client: 1, By: time.Second}).Inject(context.Background(), tg); err == nil {
		t.Fatal("a clock jump on both a node and a client was not refused")
	}
}

// TestClockDriftOnAClient: at Rate 0.5 a client's wall clock (the control
// file its worker reads) advances half a second (±0.05s) per real second,
// measured over ~1s, without a jump at the start; heal takes off the skew
// the drift built up (±0.1s). A client this run did not start, and a step
// naming both a node and a client, are refused.
func TestClockDriftOnAClient(t *testing.T) {
	clock, err := clockshim.NewControl(filepath.Join(t.TempDir(), "client-1.clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer clock.Close()
	tg := &Target{ClientClocks: map[int]*clockshim.Control{1: clock}}
	f := &ClockDrift{Client: 1, Rate: 0.5}
	inject(t, f, tg)
	if skew := time.Until(clock.Now()); skew < -50*time.Millisecond || skew > 50*time.Millisecond {
		t.Fatalf("the drift jumped the client clock by %v at the start, want 0 ± 50ms", skew)
	}
	real0, c0 := time.Now(), clock.Now()
	time.Sleep(time.Second)
	real1, c1 := time.Now(), clock.Now()
	if rate := float64(c1.Sub(c0)) / float64(real1.Sub(real0)); math.Abs(rate-0.5) > 0.05 {
		t.Fatalf("the client clock advanced at x%.3f, want x0.5 ±0.05", rate)
	}
	heal(t, f, tg)
	if skew := time.Until(clock.Now()); skew < -100*time.Millisecond || skew > 100*time.Millisecond {
		t.Fatalf("after heal the client clock is %v from real time, want 0 ± 100ms", skew)
	}
	if err := (&ClockDrift{Client: 2, Rate: 0.5}).Inject(context.Background(), tg); err == nil {
		t.Fatal("a clock drift on a client of another run was not refused")
	}
	if err := (&ClockDrift{Node: "A", Client: 1, Rate: 0.5}).Inject(context.Background(), tg); err == nil {
		t.Fatal("a clock drift on both a node and a client was not refused")
	}
}
