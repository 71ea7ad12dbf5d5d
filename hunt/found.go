// found.go builds the found story: the final plan played again
// (reproduce), its name, title and explain text (meta), and a plan said
// in one line (describePlan).

package hunt

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// reproduce plays the final plan three more times and builds the story
// from the way most of its unsafe runs went (the latest on a tie): the
// claims of each step and the narration, read from that run's history.
// A run is counted as reproduced only if each of its steps ended as the
// story claims, as a replay of found.yaml checks them; an unsafe run
// whose steps ended otherwise is counted in OtherWay.
func (h *hunter) reproduce(ctx context.Context, p Plan) (*Story, error) {
	type way struct {
		claims []claim
		last   Played
		runs   int
	}
	var ways []*way
	unsafe := 0
	for run := 0; run < Plays; run++ {
		bad, out, err := h.play(ctx, p, "found")
		if err != nil {
			return nil, err
		}
		h.res.ReproducedOf++
		if !bad {
			continue
		}
		unsafe++
		cl := claims(out.Story, out.Events, h.o.Space.Nodes)
		i := slices.IndexFunc(ways, func(w *way) bool { return slices.EqualFunc(w.claims, cl, claim.same) })
		if i < 0 {
			ways, i = append(ways, &way{claims: cl}), len(ways)
		}
		ways[i].runs++
		ways[i].last = out
	}
	var best *way
	for _, w := range ways {
		if best == nil || w.runs >= best.runs {
			best = w
		}
	}
	m := h.meta("found", p)
	var cl []claim
	if best != nil { // the steps it played, paired with its history
		cl = best.claims
		h.res.Reproduced, h.res.OtherWay, h.res.Summary = best.runs, unsafe-best.runs, best.last.Summary
		m.Expected = best.last.Verdict // leaked, for a call that never returned
	}
	return h.o.Space.build(p, m, cl)
}

// meta is the found story's name, title and source line.
func (h *hunter) meta(name string, p Plan) Meta {
	sp := h.o.Space
	what := "the clients' timing alone"
	if len(p.Faults) > 0 {
		var kinds []string
		for _, f := range p.Faults {
			if !slices.Contains(kinds, f.Kind) {
				kinds = append(kinds, f.Kind)
			}
		}
		what = strings.Join(kinds, ", ")
	}
	storage, faults := sp.CheckedWords(), sp.FaultsSearched()
	baseline, unlike := "", ""
	if sp.Baseline != "" {
		baseline, unlike = " --baseline "+sp.Baseline, ", which "+sp.Baseline+" survives"
	}
	hunted := sp.Lock
	if n := len(sp.ClientCmd); n > 0 {
		// A program's lock goes by the catalogue's name: say whose it is,
		// and that the baseline is locksim's own.
		hunted = fmt.Sprintf("the client program %s's %s", filepath.Base(filepath.Dir(sp.ClientCmd[n-1])), sp.Lock)
		if sp.Baseline != "" {
			unlike = ", which locksim's " + sp.Baseline + " survives"
		}
	}
	return Meta{
		Name:  "hunt-" + sp.Lock + "-" + name,
		Title: fmt.Sprintf("Found by sim hunt: %s breaks %s (%s)%s", what, hunted, storage, unlike),
		Source: fmt.Sprintf("sim hunt %s --storage %s --faults %s --clients %d --ttl %v%s --seed %d: found after %d candidate(s) (%d run(s))",
			sp.Lock, sp.Storage, faults, sp.Clients, sp.TTL, baseline, h.o.Seed, h.res.Candidates, h.res.CandidateRuns),
		Explain: explain(p, sp, h.res.Thresholds),
	}
}

// describePlan is a plan in one line.
func describePlan(p Plan, ttl time.Duration) string {
	parts := []string{describeTurns(p)}
	if o := describeOptions(p.Options); o != "" {
		parts = append(parts, o)
	}
	if f := p.DescribeFaults(ttl); f != "" {
		parts = append(parts, f)
	}
	return strings.Join(parts, "; ")
}

// DescribeFaults says each of the plan's faults and when, "; " between
// them ("" for none).
func (p Plan) DescribeFaults(ttl time.Duration) string {
	var parts []string
	for _, f := range p.Faults {
		parts = append(parts, f.Describe(ttl))
	}
	return strings.Join(parts, "; ")
}

// describeTurns says when each client asks and how long it works
// ("client 1 working 0.2 TTL, client 2 asking at 1.05 TTL").
func describeTurns(p Plan) string {
	var parts []string
	for i, t := range p.Turns {
		if i == 0 {
			parts = append(parts, "client 1 working "+fmtTTL(t.Work))
			continue
		}
		parts = append(parts, fmt.Sprintf("client %d asking at %s, working %s", i+1, fmtTTL(t.At), fmtTTL(t.Work)))
	}
	return strings.Join(parts, ", ")
}

// describeOptions names the lock options set ("watchdog, check_lease").
func describeOptions(o LockOptions) string {
	var on []string
	for name, set := range map[string]bool{"watchdog": o.Watchdog, "check_lease": o.CheckLease, "replicas": o.Replicas,
		fmt.Sprintf("node_timeout %s", fmtTTL(o.NodeTimeout)): o.NodeTimeout > 0} {
		if set {
			on = append(on, name)
		}
	}
	slices.Sort(on)
	return strings.Join(on, ", ")
}

// explain is the found story's explain text.
func explain(p Plan, sp Space, thresholds []string) string {
	s := "A schedule sim hunt drew and shrank: " + describePlan(p, sp.TTL) + "."
	switch {
	case sp.Baseline != "":
		s += fmt.Sprintf(" Played with %s instead, the same schedule is safe: the counterfactual.", sp.Baseline)
	case len(p.Faults) > 0:
		s += " Its fault steps are marked cause; the counterfactual plays the story without them."
	default:
		s += " No fault at all: a client's work outlasts the moment the next asks, and the lock let the next in" +
			" (for a lock with a TTL, the TTL trap: the counterfactual gives a TTL that outlasts the work)."
	}
	for _, t := range thresholds {
		s += " It is " + t + "."
	}
	return s
}
