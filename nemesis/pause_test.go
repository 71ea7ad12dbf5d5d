package nemesis

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
)

// TestPauseClientStopsRenewing: a child process renews a key's TTL to 1s
// every 100ms (a lock watchdog). While Pause holds it (SIGSTOP), the TTL
// runs down: after 600ms paused it is below 550ms (it would be >= 900ms
// if renewals went on). After Heal (SIGCONT), it is back above 800ms
// within 500ms.
func TestPauseClientStopsRenewing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	ctx := ctxT(t, 20*time.Second)
	c := r.Client()
	if err := c.Set(ctx, "lock", "1", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRenew+"="+r.Addr+" lock")
	p, err := env.StartProc("client 1", cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	tg := &Target{Redis: map[string]*env.Redis{"A": r}, Clients: map[int]*env.Proc{1: p}}

	pttl := func() time.Duration {
		d, err := c.PTTL(ctx, "lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The watchdog is running: TTL stays near 1s (seen renewed within 2s).
	waitTTLAbove(t, pttl, 850*time.Millisecond, 2*time.Second, "before the pause")
	time.Sleep(300 * time.Millisecond)
	if d := pttl(); d < 800*time.Millisecond {
		t.Fatalf("before the pause the watchdog did not keep the TTL up: %v", d)
	}

	f := &Pause{Client: 1}
	inject(t, f, tg)
	time.Sleep(600 * time.Millisecond)
	if d := pttl(); d > 550*time.Millisecond {
		t.Fatalf("paused client still renews: TTL %v after 600ms paused, want < 550ms", d)
	}
	heal(t, f, tg)
	waitTTLAbove(t, pttl, 800*time.Millisecond, 500*time.Millisecond, "after resume")
}

func waitTTLAbove(t *testing.T, pttl func() time.Duration, min, within time.Duration, when string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var d time.Duration
	for time.Now().Before(deadline) {
		if d = pttl(); d > min {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: TTL %v, not renewed above %v within %v", when, d, min, within)
}

// TestPauseServerAnswersAfterResume: a GET (2s timeout) sent during a
// 300ms Pause of the server (resumed by the fault's own timer) returns,
// and only after >= 250ms; Inject returns at once (< 100ms). Heal after
// the timer is harmless.
func TestPauseServerAnswersAfterResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	tg := &Target{Redis: map[string]*env.Redis{"A": r}}
	c := newClient(r.Addr, 2*time.Second)
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := &Pause{Node: "A", For: 300 * time.Millisecond}
	t0 := time.Now()
	inject(t, f, tg)
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Fatalf("Inject with For took %v, want it to return at once", d)
	}
	v, err := c.Get(ctx, "k").Result()
	took := time.Since(t0)
	if err != nil || v != "v" {
		t.Fatalf("GET during the pause: %q, %v", v, err)
	}
	if took < 250*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("GET answered after %v, want 250ms..1.5s (paused 300ms)", took)
	}
	heal(t, f, tg)
	if r.Paused() {
		t.Fatal("server still paused after heal")
	}
}
