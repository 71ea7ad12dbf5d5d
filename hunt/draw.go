// draw.go draws a hunt's candidates from its Space: the classic shapes
// first (classic), then swarm draws (swarm, draw, anchor), each
// candidate fixed by its seed and index (Candidate).

package hunt

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// ring is the partition that gives each of n clients a different
// majority of the nodes, each overlapping the next (Jepsen's majorities
// ring): with five nodes client 1 keeps A, B, C, client 2 C, D, E and
// client 3 E, A, B. It returns the partitions, each client cut from the
// nodes outside its majority, and the node clients 1 and 2 share; nil
// under three nodes.
func (sp Space) ring(n int) ([]Fault, string) {
	if sp.Nodes < 3 {
		return nil, ""
	}
	m := sp.Nodes/2 + 1
	var out []Fault
	for c := 0; c < n; c++ {
		keep := map[int]bool{}
		for j := 0; j < m; j++ {
			keep[(c*(m-1)+j)%sp.Nodes] = true
		}
		var cut []string
		for i, name := range sp.lockLinks {
			if !keep[i] {
				cut = append(cut, name)
			}
		}
		out = append(out, Fault{Kind: "partition", Client: c + 1, Links: cut, At: Anchor{Event: Start}})
	}
	return out, sp.lockLinks[m-1]
}

// classicOrder puts the literature's shapes first: the pause after a
// grant, the clock jump, the crash with an early restart.
func classicOrder(k string) int {
	if i := slices.Index([]string{"pause", "clock-jump", "crash"}, k); i >= 0 {
		return i
	}
	return 3
}

// two is the workload of two clients: client 1 works w, client 2 asks at
// at and works briefly.
func two(w, at float64) []Turn { return []Turn{{At: 0, Work: w}, {At: at, Work: 0.2}} }

// classic are the shapes every hunt tries first, in this order: the
// failures the literature names, each at a size past the TTL: a pause of
// the holder after its grant; a clock fault or a crash with an early
// restart on the node two majorities share (on one node, on it; with no
// partition searched, on a majority); a failover before the lock key
// reached the replica; a pause while the acquire waits; the holder's
// lock connection dropped while it works; a client's clock stepped back
// under the lease check; the TTL trap, work that outlasts the TTL with
// no fault (on three clients, a slow holder that releases late); and an
// extend after the lease ran out, with a watchdog and a lease check.
func (sp Space) classic() []Plan {
	var out []Plan
	read1 := Anchor{Client: 1, Event: Read}
	granted1 := Anchor{Client: 1, Event: Granted}
	kinds := slices.Clone(sp.Kinds)
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(classicOrder(a), classicOrder(b)) })
	for _, k := range kinds {
		kind, _ := nemesis.LookupKind(k)
		if kind.Generate == nil {
			continue
		}
		g := kind.Generate
		switch {
		case !g.OnNode:
			f := Fault{Kind: k, Client: 1, X: g.Classic, At: read1}
			if links := sp.links(); kind.Shape.Links && len(links) > 0 {
				f.Links = links[0] // the storage's link, else the lock's
			}
			out = append(out, Plan{Turns: two(0.2, 1.05), Faults: []Fault{f}})
		case sp.Nodes == 0 || sp.nodeClockless != "" && isClockKind(k):
			// No node to strike, or no clock of one to move.
		case sp.Nodes == 1:
			out = append(out, Plan{Turns: two(0.8, 0.4), Faults: []Fault{{Kind: k, Node: "A", X: g.Classic, At: granted1}}})
		case sp.has("partition"):
			// Client 2 asks once client 1, waiting node_timeout for the
			// nodes cut off, is granted and the shared node struck.
			ring, shared := sp.ring(2)
			out = append(out, Plan{Turns: two(0.8, 0.5), Faults: append(ring, Fault{Kind: k, Node: shared, X: g.Classic, At: granted1})})
		default: // a majority's clocks, or a majority crashed
			p := Plan{Turns: two(0.8, 0.4)}
			for i := 0; i < sp.Nodes/2+1; i++ {
				p.Faults = append(p.Faults, Fault{Kind: k, Node: scenarios.NodeName(i), X: g.Classic, At: granted1})
			}
			out = append(out, p)
		}
	}
	if sp.has("failover") && sp.has("replication-lag") && sp.can("replicas") {
		out = append(out, Plan{Turns: two(0.8, 0.4), Options: LockOptions{Replicas: true}, Faults: []Fault{
			{Kind: "replication-lag", Node: "A", At: Anchor{Event: Start}},
			{Kind: "failover", Node: "A", At: granted1}}})
	}
	if sp.has("pause") && sp.has("latency") && len(sp.lockLinks) > 0 {
		// Client 2 works long enough that its write and the holder's,
		// late, overlap; the nodes' answers wait out the pause.
		out = append(out, Plan{Turns: []Turn{{At: 0, Work: 0.2}, {At: 1.2, Work: 1}}, Options: LockOptions{NodeTimeout: 6}, Faults: []Fault{
			{Kind: "latency", Client: 1, Links: sp.lockLinks, X: 0.1, At: Anchor{Event: Start}},
			{Kind: "pause", Client: 1, X: 1.5, At: Anchor{Client: 1, Event: Asks}, After: 0.03}}})
	}
	if sp.has("drop") && len(sp.lockLinks) > 0 {
		out = append(out, Plan{Turns: two(2, 0.2), Faults: []Fault{{Kind: "drop", Client: 1, Links: sp.lockLinks, At: read1}}})
	}
	if sp.has("clock-jump") && sp.can("check_lease") && !sp.noClientClock {
		out = append(out, Plan{Turns: two(1.5, 1.05), Options: LockOptions{CheckLease: true},
			Faults: []Fault{{Kind: "clock-jump", Client: 1, X: 1.5, At: read1}}})
	}
	out = append(out, Plan{Turns: two(1.5, 1.05)})
	if sp.Clients >= 3 {
		out = append(out, Plan{Turns: []Turn{{At: 0, Work: 1.2}, {At: 1.05, Work: 1}, {At: 1.4, Work: 0.2}}})
	}
	if sp.has("pause") && sp.can("watchdog") && sp.can("check_lease") {
		// An extend after the lease ran out (redlock-rb#36): the holder,
		// paused past the TTL, resumes after client 2 has come and gone;
		// its watchdog's overdue extend must fail, and its lease check
		// then keep its stale write out. Last, so that the shapes before
		// keep their places.
		out = append(out, Plan{Turns: []Turn{{At: 0, Work: 3.5}, {At: 1.3, Work: 0.1}}, Options: LockOptions{Watchdog: true, CheckLease: true},
			Faults: []Fault{{Kind: "pause", Client: 1, X: 2.5, At: read1}}})
	}
	return out
}

// swarm draws a plan from rng: each allowed kind in or out of the run
// (swarm testing: a fault left out cannot mask another), one to three
// faults, each with a value drawn from its kind's range, a target drawn
// among the clients, nodes or links it can strike (with the majorities
// ring, the shared node half the time), an anchor and an offset, and the
// clients' turns and the lock's options drawn.
func (sp Space) swarm(rng *rand.Rand) Plan {
	var in []string
	for _, k := range sp.Kinds {
		if rng.IntN(2) == 0 {
			in = append(in, k)
		}
	}
	n := 2
	if sp.Clients >= 3 && rng.IntN(3) == 0 {
		n = 3
	}
	p := Plan{Turns: []Turn{{At: 0, Work: round2(0.1 + rng.Float64()*1.4)}}}
	for c := 1; c < n; c++ {
		p.Turns = append(p.Turns, Turn{At: round2(p.Turns[c-1].At + 0.1 + rng.Float64()*1.4), Work: round2(0.1 + rng.Float64()*1.2)})
	}
	if sp.nodeTimeout > 0 && rng.IntN(5) == 0 {
		p.Options.NodeTimeout = 6
	}
	if sp.can("watchdog") && rng.IntN(4) == 0 {
		p.Options.Watchdog = true
	} else if sp.can("check_lease") && rng.IntN(3) == 0 {
		p.Options.CheckLease = true
	}
	shared := ""
	struck := map[string]bool{} // a kind strikes each target once
	if slices.Contains(in, "partition") && sp.Nodes >= 3 && rng.IntN(2) == 0 {
		var ring []Fault
		ring, shared = sp.ring(n)
		p.Faults = append(p.Faults, ring...)
		for _, f := range ring {
			struck[target(f)] = true
		}
	}
	if len(in) == 0 {
		return p
	}
	for k := 1 + rng.IntN(3); k > 0; k-- {
		f := sp.draw(rng, in[rng.IntN(len(in))], n, shared)
		if f == nil {
			continue
		}
		if f.kind().Shape.Replicas {
			p.Options.Replicas = true
			p.Options.Watchdog, p.Options.CheckLease = false, false
		}
		if struck[target(*f)] || struck[downs(*f)] {
			continue
		}
		struck[target(*f)] = true
		if d := downs(*f); d != "" {
			struck[d] = true
		}
		p.Faults = append(p.Faults, *f)
	}
	return p
}

// target is what a kind may strike once in a plan: a node, or a client
// (a second partition or delay of the same client's links would be a
// second toxic on a link that has one).
func target(f Fault) string { return f.Kind + " " + f.On() }

// downs is the node a fault takes down (a crash, a power loss, a
// failover: one each per node in a plan, for a node another fault killed
// is not there to kill, or to fail over), or "".
func downs(f Fault) string {
	if f.Node == "" || f.kind().Effect != history.EffectDown {
		return ""
	}
	return "down " + f.Node
}

// draw draws one fault of kind k on a plan of n clients; nil when the
// kind cannot strike it.
func (sp Space) draw(rng *rand.Rand, k string, n int, shared string) *Fault {
	f := Fault{Kind: k, At: sp.anchor(rng, n)}
	if rng.IntN(3) == 0 {
		f.After = round2(rng.Float64() * 0.5)
	}
	node := func() string {
		if shared != "" && rng.IntN(2) == 0 {
			return shared
		}
		return scenarios.NodeName(rng.IntN(sp.Nodes))
	}
	kind, _ := nemesis.LookupKind(k)
	if kind.Generate == nil { // placed by shape
		switch {
		case kind.Shape.Replicas:
			if !sp.can("replicas") {
				return nil
			}
			f.Node = node()
		default:
			links := sp.links()
			if kind.Shape.LockLinks {
				links = [][]string{sp.lockLinks}
			}
			if len(links) == 0 {
				return nil
			}
			f.Client = 1 + rng.IntN(n)
			f.Links = links[rng.IntN(len(links))]
			if len(f.Links) > 1 && rng.IntN(2) == 0 { // some of the nodes
				f.Links = slices.Clone(f.Links[:1+rng.IntN(len(f.Links)-1)])
			}
		}
		return &f
	}
	g := kind.Generate
	f.X = round2(g.Range[0] + rng.Float64()*(g.Range[1]-g.Range[0]))
	noNodeClock := sp.Nodes == 0 || sp.nodeClockless != ""
	switch {
	case g.OnNode && kind.Effect == history.EffectClock && (noNodeClock || rng.IntN(4) == 0) && !(sp.noClientClock && !noNodeClock):
		if !kind.Shape.ClientsToo || sp.noClientClock {
			return nil // a client's clock is only stepped, and only one the program lets move
		}
		f.Client = 1 + rng.IntN(n)
	case g.OnNode:
		if sp.Nodes == 0 {
			return nil
		}
		f.Node = node()
	default:
		f.Client = 1 + rng.IntN(n)
		if kind.Shape.Links { // the storage's link, or some of the lock's: an acquire then waits for those nodes
			links := sp.links()
			f.Links = links[rng.IntN(len(links))]
			if len(f.Links) > 1 && rng.IntN(2) == 0 {
				f.Links = slices.Clone(f.Links[:1+rng.IntN(len(f.Links)-1)])
			}
		}
	}
	return &f
}

// anchor draws when a fault strikes: most often while client 1 works
// (after its read), else at the start, while an acquire waits, after a
// grant or after client 1's release.
func (sp Space) anchor(rng *rand.Rand, n int) Anchor {
	switch r := rng.IntN(20); {
	case r < 8:
		return Anchor{Client: 1, Event: Read}
	case r < 11:
		return Anchor{Client: 1, Event: Granted}
	case r < 13:
		return Anchor{Event: Start}
	case r < 15:
		return Anchor{Client: 1, Event: Asks}
	case r < 17:
		return Anchor{Client: 1 + rng.IntN(n-1) + 1, Event: Asks}
	case r < 19:
		return Anchor{Client: 2, Event: Granted}
	default:
		return Anchor{Client: 1, Event: Released}
	}
}

// isClockKind says whether kind k moves a clock, as its kind says.
func isClockKind(k string) bool {
	kind, _ := nemesis.LookupKind(k)
	return kind.Effect == history.EffectClock
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// Candidate returns the i-th candidate of a hunt with this seed: the
// classic shapes first, then swarm draws, each from its own seed, so
// any candidate is reproducible alone.
func (sp Space) Candidate(seed int64, i int) Plan {
	if c := sp.classic(); i < len(c) {
		return c[i]
	}
	s := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i)
	return sp.swarm(rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d)))
}
