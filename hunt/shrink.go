// shrink.go makes a failing plan minimal (hunter.shrink): faults removed,
// a client dropped, options turned off, triggers moved earlier, and each
// magnitude bisected to a readable value that still fails.

package hunt

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/locksim/locksim/nemesis"
)

// shrink makes a failing plan minimal: faults removed one at a time
// while it still fails (to a 1-minimal set), a third client dropped, the
// lock's options turned off, each fault's trigger moved to the earliest
// anchor where it still fails, then each magnitude bisected toward the
// point where it stops failing and rounded to a readable value that
// still fails. Every change is kept only if the plan still fails.
func (h *hunter) shrink(ctx context.Context, p Plan) (Plan, error) {
	p = clonePlan(p) // the sizes are changed in place
	ttl := h.o.Space.TTL
	h.phase = &h.res.ShrinkRuns
	budget := h.played + h.o.ShrinkRuns
	fails := func(q Plan) (bool, error) {
		if h.played >= budget {
			return false, nil // out of shrink runs: keep what we have
		}
		return h.fails(ctx, q)
	}
	// try keeps q when it still fails.
	try := func(q Plan, what string) (bool, error) {
		bad, err := fails(q)
		if err == nil && bad {
			h.o.Say("shrink: %s", what)
			p = q
		}
		return bad, err
	}
	for removed := true; removed && len(p.Faults) > 1; {
		removed = false
		for i := range p.Faults {
			q := clonePlan(p)
			q.Faults = slices.Delete(q.Faults, i, i+1)
			bad, err := try(q, p.Faults[i].Describe(ttl)+" is not needed")
			if err != nil {
				return p, err
			}
			if bad {
				removed = true
				break
			}
		}
	}
	if len(p.Turns) > 2 {
		q := clonePlan(p)
		q.Turns = q.Turns[:2]
		q.Faults = slices.DeleteFunc(q.Faults, func(f Fault) bool { return f.Client > 2 || f.At.Client > 2 })
		if _, err := try(q, "client 3 is not needed"); err != nil {
			return p, err
		}
	}
	for _, o := range []struct {
		name string
		off  func(*LockOptions) bool // turns it off; false: it was off
	}{
		{"the watchdog", func(o *LockOptions) bool { on := o.Watchdog; o.Watchdog = false; return on }},
		{"the lease check", func(o *LockOptions) bool { on := o.CheckLease; o.CheckLease = false; return on }},
		{"the replicas", func(o *LockOptions) bool { on := o.Replicas; o.Replicas = false; return on }},
		{"the long node_timeout", func(o *LockOptions) bool { on := o.NodeTimeout > 0; o.NodeTimeout = 0; return on }},
	} {
		q := clonePlan(p)
		if !o.off(&q.Options) || (o.name == "the replicas" && needsReplicas(p)) {
			continue
		}
		if _, err := try(q, o.name+" is not needed"); err != nil {
			return p, err
		}
	}
	// A trigger moves to an earlier event only if the story then fails in
	// every run of three: an earlier trigger races what it used to
	// follow, and a race that went the story's way twice is no story.
	// While an acquire waits is an event only for a client whose lock
	// links are delayed (else its acquire is over in a moment).
	for i := range p.Faults {
		for _, a := range anchorsBefore(p.Faults[i].At, len(p.Turns)) {
			if a.Event == Asks && !delayedLock(p, a.Client) {
				continue
			}
			q := clonePlan(p)
			q.Faults[i].At, q.Faults[i].After = a, 0
			bad, err := h.failsEvery(ctx, q, budget)
			if err != nil {
				return p, err
			}
			if bad {
				h.o.Say("shrink: %s strikes %s", p.Faults[i].What(ttl), a)
				p = q
				break
			}
		}
	}
	h.unbisected = clonePlan(p)
	for i := range p.Faults {
		g, ok := p.Faults[i].drawn()
		if !ok {
			continue
		}
		lo, unit := g.Range[0]/2, " TTL"
		if g.Unit == nemesis.UnitRate {
			lo, unit = 1, ""
		}
		x, note, err := h.bisect(p.Faults[i].X, lo, unit, func(x float64) (bool, error) {
			q := clonePlan(p)
			q.Faults[i].X = x
			return fails(q)
		})
		if err != nil {
			return p, err
		}
		p.Faults[i].X = x
		if note != "" {
			// The threshold holds for this story: where it turns depends on
			// when the others ask as much as on the lease.
			h.res.Thresholds = append(h.res.Thresholds, fmt.Sprintf("unsafe when the %s of %s is %s, %s",
				g.Name, p.Faults[i].On(), note, describeTurns(p)))
		}
	}
	if len(p.Faults) > 0 {
		h.res.OneMinimal = true
		for i := range p.Faults {
			q := clonePlan(p)
			q.Faults = slices.Delete(q.Faults, i, i+1)
			bad, err := h.fails(ctx, q) // outside the budget: this proves minimality
			if err != nil {
				return p, err
			}
			h.res.OneMinimal = h.res.OneMinimal && !bad
		}
	}
	return p, nil
}

// failsEvery says whether plan p is unsafe in each of three runs (the
// first that is not ends it), within the shrink's budget of story runs,
// and leaves the baseline safe.
func (h *hunter) failsEvery(ctx context.Context, p Plan, budget int) (bool, error) {
	for run := 0; run < Plays; run++ {
		if h.played >= budget {
			return false, nil
		}
		bad, _, err := h.play(ctx, p, "candidate")
		if err != nil || !bad {
			return false, err
		}
	}
	return h.baselineSafe(ctx, p)
}

// delayedLock says whether plan p delays some of client c's links to the
// lock from the start.
func delayedLock(p Plan, c int) bool {
	return slices.ContainsFunc(p.Faults, func(f Fault) bool {
		return kindOf(f.Kind).Shape.Delays && f.Client == c && (f.At.Event == Start || f.At.Event == "") &&
			len(f.Links) > 0 && !slices.Contains(f.Links, nemesis.StorageNode)
	})
}

// needsReplicas says whether a fault of p needs the nodes' replicas.
func needsReplicas(p Plan) bool {
	return slices.ContainsFunc(p.Faults, func(f Fault) bool { return f.kind().Shape.Replicas })
}

// anchorsBefore lists the anchors earlier than a, earliest first, on a
// plan of n clients.
func anchorsBefore(a Anchor, n int) []Anchor {
	all := []Anchor{{Event: Start}}
	for c := 1; c <= n; c++ {
		for _, e := range Events {
			all = append(all, Anchor{Client: c, Event: e})
		}
	}
	var out []Anchor
	for _, b := range all {
		if b.order() < a.order() {
			out = append(out, b)
		}
	}
	return out
}

// bisect narrows x, which fails, toward lo, where it may not: five
// halvings, then the value rounded up to two significant digits (a
// value that failed). It returns the value and the threshold in words
// ("1.1 TTL (safe at 1.02 TTL)", or "" when even lo fails).
func (h *hunter) bisect(x, lo float64, unit string, fails func(float64) (bool, error)) (float64, string, error) {
	bad, err := fails(lo)
	if err != nil || bad {
		return lo, "", err
	}
	hi := x
	for i := 0; i < 5; i++ {
		mid := sig((lo+hi)/2, 6) // 0.95, not 0.9500000000000001
		bad, err := fails(mid)
		if err != nil {
			return hi, "", err
		}
		if bad {
			hi = mid
		} else {
			lo = mid
		}
	}
	if r := roundUp(hi); r < x {
		if bad, err := fails(r); err == nil && bad {
			hi = r
		}
	}
	return hi, fmt.Sprintf("%s%s (safe at %s%s)", fmtNum(hi), unit, fmtNum(lo), unit), nil
}

// roundUp rounds x up to two significant digits: the nearest float to
// the decimal, 1.2 and not 1.2000000000000002 (12 * 0.1), and x itself
// when it has two digits already, whatever noise its last bits carry.
func roundUp(x float64) float64 {
	if x <= 0 {
		return x
	}
	r := sig(x, 2)
	if r < x*(1-1e-9) {
		r = sig(r+math.Pow(10, math.Floor(math.Log10(x))-1), 2)
	}
	return r
}

// sig is x to n significant digits, as the nearest float to that
// decimal.
func sig(x float64, n int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', n, 64), 64)
	return r
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }

func clonePlan(p Plan) Plan {
	p.Faults = append([]Fault(nil), p.Faults...)
	for i := range p.Faults {
		p.Faults[i].Links = slices.Clone(p.Faults[i].Links)
	}
	p.Turns = slices.Clone(p.Turns)
	return p
}
