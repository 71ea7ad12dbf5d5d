package nemesis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
)

// TestRefusesForeignTargets: every fault refuses a node, client or link
// that is not this run's, with an error naming it, and changes nothing.
func TestRefusesForeignTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	n := newNetwork(t)
	addLink(t, n, 1, "A", r.Addr)
	tg := &Target{Redis: map[string]*env.Redis{"A": r}, Network: n, Clients: map[int]*env.Proc{}}
	for _, tc := range []struct {
		f    Breaker
		want string
	}{
		{&ClockJump{Node: "Z", By: time.Second}, `"Z"`},
		{&ClockDrift{Node: "Z", Rate: 2}, `"Z"`},
		{&Pause{Node: "Z"}, `"Z"`},
		{&Pause{Client: 9}, "client 9"},
		{&Pause{Client: 1, Node: "A"}, "not both"},
		{&Latency{Client: 1, Nodes: []string{"A", "Z"}, Delay: time.Second}, `"Z"`},
		{&Latency{Client: 2, Nodes: []string{"A"}, Delay: time.Second}, "c2-A"},
		{&Partition{Client: 1, Nodes: []string{"Z"}}, `"Z"`},
		{&ConnReset{Client: 1, Nodes: []string{PGNode}}, "PostgreSQL"},
		{&Crash{Node: "Z"}, `"Z"`},
		{&Failover{Node: "A"}, "no replica"},
	} {
		err := tc.f.Inject(context.Background(), tg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T on %s: got %v, want an error with %s", tc.f, tc.f.On(), err, tc.want)
		}
		if err := tc.f.Heal(context.Background(), tg); err != nil {
			t.Errorf("%T: Heal after a refused Inject: %v", tc.f, err)
		}
	}
	if !r.Running() || r.Clock.Skew() != 0 {
		t.Fatal("a refused fault changed the server")
	}
	if m := median(pingRTTs(t, n.Links()[0].Listen, 3)); m > 30*time.Millisecond {
		t.Fatalf("a refused latency fault left a toxic: RTT %v", m)
	}
}

// TestGuardInjectTwiceHealBefore: Heal before Inject does nothing (no
// jump back), a second Inject does nothing (no double jump), a second
// Heal does nothing. A Latency naming one missing link among good ones
// is refused and leaves no toxic on the good one.
func TestGuardInjectTwiceHealBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	tg := &Target{Redis: map[string]*env.Redis{"A": r}}
	f := &ClockJump{Node: "A", By: 10 * time.Second}
	heal(t, f, tg)
	if s := r.Clock.Skew(); s != 0 {
		t.Fatalf("Heal before Inject moved the clock by %v", s)
	}
	inject(t, f, tg)
	inject(t, f, tg)
	if s := r.Clock.Skew(); s != 10*time.Second || !f.Injected() {
		t.Fatalf("after two Injects the skew is %v, want 10s", s)
	}
	heal(t, f, tg)
	heal(t, f, tg)
	if s := r.Clock.Skew(); s != 0 || f.Injected() {
		t.Fatalf("after two Heals the skew is %v, want 0", s)
	}

	n := newNetwork(t)
	l1 := addLink(t, n, 1, "A", r.Addr)
	tg.Network = n
	tg.Redis["B"] = r // B is a node, but client 1 has no link to it
	lat := &Latency{Client: 1, Nodes: []string{"A", "B"}, Delay: 200 * time.Millisecond}
	if err := lat.Inject(context.Background(), tg); err == nil {
		t.Fatal("Latency on a missing link succeeded")
	}
	if m := median(pingRTTs(t, l1.Listen, 3)); m > 30*time.Millisecond {
		t.Fatalf("a failed Latency left its toxic on c1-A: RTT %v", m)
	}
}
