package hunt

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestProgressFollowsThePhases: a hunt tells Options.Progress of every
// story run as it ends, one call per run, its phases in order
// (candidates, shrink, reproduction), with counts that end at the
// Result's.
func TestProgressFollowsThePhases(t *testing.T) {
	sp, err := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	played := 0
	var seen []Progress
	res, _, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: oracle(&played),
		Progress: func(p Progress) { seen = append(seen, p) }})
	if err != nil || !res.Found {
		t.Fatalf("found %v, err %v", res.Found, err)
	}
	if len(seen) != res.StoryRuns || len(seen) != played {
		t.Fatalf("%d progress calls for %d story runs (%d played)", len(seen), res.StoryRuns, played)
	}
	var phases []Phase
	last := map[Phase]int{}
	for i, p := range seen {
		if p.StoryRuns != i+1 || p.Played.Story == nil || p.Played.Verdict == "" {
			t.Errorf("call %d: story runs %d, story %v, verdict %q", i+1, p.StoryRuns, p.Played.Story != nil, p.Played.Verdict)
		}
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		last[p.Phase] = p.PhaseRuns
	}
	if want := []Phase{PhaseCandidates, PhaseShrink, PhaseReproduction}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if last[PhaseCandidates] != res.CandidateRuns || last[PhaseShrink] != res.ShrinkRuns || last[PhaseReproduction] != res.ReproductionRuns {
		t.Errorf("last counts %v; result: %d candidate, %d shrink, %d reproduction runs", last, res.CandidateRuns, res.ShrinkRuns, res.ReproductionRuns)
	}
	if seen[len(seen)-1].Candidates != res.Candidates {
		t.Errorf("%d candidates told, %d in the result", seen[len(seen)-1].Candidates, res.Candidates)
	}
}
