package hunt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestHuntOnServers: on real servers, a hunt against single-node Redis
// with plain storage finds the pause of the holder past its lease,
// shrinks it to one pause just past the TTL and writes a story the
// loader accepts and whose counterfactual is the same story without the
// pause; against etcd with fenced storage, under pauses and delays, and
// against Redlock under partitions, pauses and delays with mutual
// exclusion alone, it finds nothing.
func TestHuntOnServers(t *testing.T) {
	if testing.Short() {
		t.Skip("plays stories on real servers")
	}
	ctx := context.Background()
	sp, err := NewSpace("redis", "plain", []string{"pause"}, 300*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, story, _, err := Run(ctx, Options{Space: sp, Seed: 1, Runs: 5, ShrinkRuns: 30, Play: onServers(t, t.TempDir()), Say: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || res.Final == nil || len(res.Final.Faults) != 1 || res.Final.Faults[0].Kind != "pause" {
		t.Fatalf("redis under pauses: found %v, final %+v", res.Found, res.Final)
	}
	if x := res.Final.Faults[0].X; x < 0.8 || x > 1.6 {
		t.Errorf("the pause shrank to %.2f TTL, want near the TTL", x)
	}
	if res.Reproduced < 2 || !res.OneMinimal {
		t.Errorf("reproduced %d of %d, one-minimal %v", res.Reproduced, res.ReproducedOf, res.OneMinimal)
	}
	sc, err := scenarios.Parse("found.yaml", story.YAML)
	if err != nil {
		t.Fatalf("found.yaml does not load: %v\n%s", err, story.YAML)
	}
	if !strings.Contains(string(story.YAML), "granted") || sc.Counterfactual == nil {
		t.Errorf("found.yaml lacks its claims or counterfactual:\n%s", story.YAML)
	}
	t.Logf("found.yaml:\n%s", story.YAML)

	sp, err = NewSpace("etcd", "fenced", []string{"pause", "latency"}, 2*time.Second, 0) // etcd grants no shorter lease
	if err != nil {
		t.Fatal(err)
	}
	res, _, _, err = Run(ctx, Options{Space: sp, Seed: 1, Runs: 5, Play: onServers(t, t.TempDir()), Say: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found {
		t.Fatalf("etcd with fenced storage: a false alarm: %+v", res.Final)
	}
	// Redlock keeps mutual exclusion under partitions (the majorities
	// ring among them), pauses and delays, with no clock or crash fault:
	// a paused or delayed holder's lease has ended in its own eyes too.
	sp, err = NewSpace("redlock", "none", []string{"partition", "pause", "latency"}, 500*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, _, _, err = Run(ctx, Options{Space: sp, Seed: 2, Runs: 10, Play: onServers(t, t.TempDir()), Say: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found {
		t.Fatalf("redlock under partitions, pauses and delays, mutual exclusion alone: a false alarm: %+v", res.Final)
	}
}

// TestHuntFindsAMutantUnaided: the same search that finds nothing
// against PostgreSQL's session lock finds its mutant, the shared
// advisory lock taken by mistake (postgres-shared), which lets client 2
// in while client 1 holds it: a pause of client 1 then lets client 2's
// update be lost, which the session lock refuses.
func TestHuntFindsAMutantUnaided(t *testing.T) {
	if testing.Short() {
		t.Skip("plays stories on real servers")
	}
	ctx := context.Background()
	hunt := func(lock string) *Result {
		sp, err := NewSpace(lock, "plain", []string{"pause"}, 300*time.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, _, _, err := Run(ctx, Options{Space: sp, Seed: 1, Runs: 3, ShrinkRuns: 6, Play: onServers(t, t.TempDir()), Say: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := hunt("postgres-session"); res.Found {
		t.Fatalf("postgres-session: a false alarm: %+v", res.Final)
	}
	res := hunt("postgres-shared")
	if !res.Found || res.Final == nil || res.Reproduced < 2 {
		t.Fatalf("postgres-shared: found %v, final %+v, reproduced %d of %d", res.Found, res.Final, res.Reproduced, res.ReproducedOf)
	}
}

// onServers is OnServers for a test: the servers stop when it ends.
func onServers(t *testing.T, dir string) Player {
	play, closeServers := OnServers(dir, runner.Options{Seed: 1})
	t.Cleanup(closeServers)
	return play
}
