package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/locksim/locksim/scenarios"
)

// TestKeptServers: stories played one after another on kept servers end
// as they do on servers of their own, the story and its counterfactual
// alike (nothing of the last run is left: a lock key, a paused client's
// lease, the counter); a story that needs other servers gets a set of
// its own, kept beside the first; one that follows a lasting fault (a
// failover) gets new ones.
func TestKeptServers(t *testing.T) {
	if testing.Short() {
		t.Skip("plays stories on real servers")
	}
	ctx := context.Background()
	keep := NewKept()
	defer keep.Close()
	find := func(name string) *scenarios.Scenario {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	pause := find("redis-watchdog-pause")
	control, err := pause.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	failover := find("redis-failover")
	plays := []struct {
		sc                *scenarios.Scenario
		started, restarts int
	}{
		{pause, 1, 0},
		{pause, 1, 0},
		{control, 1, 0},
		{pause, 1, 0},
		{failover, 2, 0}, // replicas: other servers
		{pause, 2, 0},    // the first set, kept
		{failover, 3, 1}, // the failover spoiled the second
	}
	for i, p := range plays {
		out, err := Run(ctx, p.sc, Options{Seed: 1, Out: t.TempDir(), Keep: keep})
		if err != nil {
			t.Fatalf("play %d (%s): %v", i+1, p.sc.Name, err)
		}
		if out.Check.Verdict != p.sc.Expected {
			t.Errorf("play %d (%s): %s, want %s: %s", i+1, p.sc.Name, out.Check.Verdict, p.sc.Expected, out.Check.Summary)
		}
		if keep.Started != p.started || len(keep.Restarts) != p.restarts {
			t.Fatalf("play %d (%s): started %d, restarts %q; want %d and %d", i+1, p.sc.Name, keep.Started, keep.Restarts, p.started, p.restarts)
		}
	}
	if keep.Reused != 4 {
		t.Errorf("reused %d times, want 4", keep.Reused)
	}
	if why := keep.Restarts[0]; !strings.HasPrefix(why, "failover: ") {
		t.Errorf("restart after the failover: %q, want the failover's reason", why)
	}
}
