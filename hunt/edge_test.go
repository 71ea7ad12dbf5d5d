package hunt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
)

// TestNudged: a nudge moves every client after the first, never client
// 1 and never before client 1's ask, and leaves the plan it came from.
func TestNudged(t *testing.T) {
	p := Plan{Turns: []Turn{{At: 0, Work: 0.2}, {At: 1.05, Work: 0.2}, {At: 0.1, Work: 0.3}}}
	later, earlier := p.Nudged(EdgeMargin), p.Nudged(-EdgeMargin)
	if got := []float64{later.Turns[0].At, later.Turns[1].At, later.Turns[2].At}; !slices.Equal(got, []float64{0, 1.3, 0.35}) {
		t.Errorf("0.25 TTL later: asks at %v", got)
	}
	if got := []float64{earlier.Turns[0].At, earlier.Turns[1].At, earlier.Turns[2].At}; !slices.Equal(got, []float64{0, 0.8, 0}) {
		t.Errorf("0.25 TTL earlier: asks at %v", got)
	}
	if p.Turns[1].At != 1.05 || later.Turns[1].Work != 0.2 {
		t.Errorf("the nudge changed its plan or a work time: %+v, %+v", p.Turns, later.Turns)
	}
}

// TestTimingEdgeNotCounted: a schedule that breaks the hunted lock, and
// its baseline only when client 2 asks a quarter TTL from where it was
// drawn, is not counted (the two share the edge); the same baseline safe
// at every nudge leaves it counted.
func TestTimingEdgeNotCounted(t *testing.T) {
	sp, err := NewSpace("redlock", "plain", []string{"pause"}, time.Second, 0)
	if err == nil {
		sp, err = sp.WithBaseline("redlock-wallclock")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, edge := range []bool{true, false} {
		var drawn float64 // client 2's ask in the last plan the hunted lock played
		hunted, said := 0, []string{}
		play := func(ctx context.Context, s *Story) (Played, error) {
			if s.Scenario.Lock == "redlock" {
				if len(s.Plan.Turns) > 1 {
					drawn = s.Plan.Turns[1].At
				}
				return oracle(&hunted)(ctx, s)
			}
			if edge && len(s.Plan.Turns) > 1 && s.Plan.Turns[1].At != drawn {
				return Played{Verdict: checker.Unsafe, Summary: "a lost update"}, nil
			}
			return Played{Verdict: checker.Safe}, nil
		}
		say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
		res, _, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 12, Play: play, Say: say})
		if err != nil {
			t.Fatal(err)
		}
		if res.Found == edge {
			t.Errorf("baseline unsafe at a nudge %v: found %v, want %v", edge, res.Found, !edge)
		}
		if edge != strings.Contains(strings.Join(said, "\n"), "on a timing edge the two locks share, not counted") {
			t.Errorf("baseline unsafe at a nudge %v; the hunt said:\n%s", edge, strings.Join(said, "\n"))
		}
	}
}
