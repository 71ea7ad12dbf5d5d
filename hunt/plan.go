// Package hunt searches fault schedules against a lock for a violation
// of mutual exclusion or of the protected data, shrinks the first one it
// finds to a minimal story, and writes that story as a scenario file that
// `sim run` plays like any in the catalogue.
//
// A candidate is a Plan: the story workload (client 1 takes the lock and
// starts a read-modify-write that takes Work, the faults strike inside its
// critical section, client 2 takes the lock Gap later and does its own)
// and the faults, each a kind that the fault registry lets a generator
// draw (nemesis.Drawn: its parameter and its range relative to the TTL).
// A plan is rendered as scenario YAML, loaded by the same loader as every
// story, and played on real servers by the runner.
package hunt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"locksim/backends"
	"locksim/clients"
	"locksim/history"
	"locksim/nemesis"
	"locksim/scenarios"
)

// Plan is one candidate schedule.
type Plan struct {
	// Work is how long client 1 works between its read and its write,
	// in TTLs.
	Work float64 `json:"work_ttl"`
	// Gap is how long after client 1's read client 2 tries to take the
	// lock, in TTLs.
	Gap float64 `json:"gap_ttl"`
	// Faults strike, in order, just after client 1 has read the counter.
	Faults []Fault `json:"faults"`
}

// Fault is one fault of a plan: a kind, whom it aims at, its drawn value.
type Fault struct {
	// Kind is a fault kind that a generator can draw.
	Kind string `json:"kind"`
	// Client is the client it strikes (1: the holder, 2: the next one),
	// for a kind that strikes a client.
	Client int `json:"client,omitempty"`
	// Node is the server it strikes, for a kind that strikes a node.
	Node string `json:"node,omitempty"`
	// X is the drawn value: a multiple of the TTL for a duration, else
	// the number itself (a clock's rate).
	X float64 `json:"x"`
}

// drawn is the kind's drawn parameter.
func (f Fault) drawn() nemesis.Generated { return mustDrawn(f.Kind) }

// value is X as the kind's Build takes it: nanoseconds for a duration.
func (f Fault) value(ttl time.Duration) float64 {
	if f.drawn().Unit == nemesis.UnitRate {
		return f.X
	}
	return math.Round(f.X * float64(ttl))
}

// Describe says what the fault does, in words ("pause on client 1
// (750ms)").
func (f Fault) Describe(ttl time.Duration) string {
	g := f.drawn()
	x := fmtTTL(f.X)
	if g.Unit == nemesis.UnitRate {
		x = strconv.FormatFloat(f.X, 'g', 3, 64)
	}
	b := g.Build(f.Client, f.Node, f.value(ttl))
	return fmt.Sprintf("%s on %s (%s; %s %s)", f.Kind, b.On(), b.Detail(), g.Name, x)
}

// On names what the fault strikes ("client 1", "C").
func (f Fault) On() string {
	if f.Node != "" {
		return f.Node
	}
	return fmt.Sprintf("client %d", f.Client)
}

// fmtTTL prints a multiple of the TTL ("1.05 TTL").
func fmtTTL(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) + " TTL" }

// Space is what a hunt searches: a lock, its storage and the fault kinds
// allowed, on a story of two clients.
type Space struct {
	Lock    string
	Storage string
	Kinds   []string
	TTL     time.Duration
	// Nodes is how many lock servers a node fault may strike (A, B...);
	// 0: the lock has no server a node fault reaches.
	Nodes int
}

// Searchable lists the fault kinds a hunt can draw: those the registry
// says how to draw (each declares its parameter and range), a
// generator's and those only a hunt draws (a crash).
func Searchable() []string {
	var out []string
	for _, k := range nemesis.DrawnKinds() {
		out = append(out, k.Name)
	}
	return out
}

// NewSpace checks a hunt's choices and fills in what the lock implies.
// kinds empty: every searchable kind the lock's servers and the storage
// allow.
func NewSpace(lock, storage string, kinds []string, ttl time.Duration) (Space, error) {
	spec, err := clients.Lookup(lock)
	if err != nil {
		return Space{}, err
	}
	if !slices.Contains(scenarios.StorageModes, storage) && storage != "none" {
		return Space{}, fmt.Errorf("--storage %q: expected none, %s", storage, strings.Join(scenarios.StorageModes[1:], ", "))
	}
	if ttl <= 0 {
		return Space{}, fmt.Errorf("--ttl %v: expected a positive duration", ttl)
	}
	if ttl < spec.MinTTL {
		return Space{}, fmt.Errorf("--ttl %v: %s's leases last at least %v, so the faults' sizes would be relative to another lease than the one granted: give --ttl %v or more", ttl, lock, spec.MinTTL, spec.MinTTL)
	}
	sp := Space{Lock: lock, Storage: storage, TTL: ttl, Nodes: backends.DefaultNodes(spec)}
	clockless := ""
	if b := backends.Of(spec); b != nil {
		clockless = b.NodeClockless()
	}
	given := len(kinds) > 0
	if !given {
		kinds = Searchable()
	}
	for _, k := range kinds {
		kind, ok := nemesis.LookupKind(k)
		if !ok || kind.Generate == nil {
			return Space{}, fmt.Errorf("--faults %q: expected some of %s", k, strings.Join(Searchable(), ", "))
		}
		why := ""
		switch {
		case kind.Generate.OnNode && sp.Nodes == 0:
			why = fmt.Sprintf("it strikes a lock server and %s's are not nodes of the story", lock)
		case kind.Generate.OnNode && clockless != "" && isClock(kind):
			why = clockless
		case kind.Generate.UntilSectionEnds && storage == "none":
			why = "it delays the write to the protected storage and --storage is none"
		}
		if why != "" {
			if given {
				return Space{}, fmt.Errorf("--faults %s: %s", k, why)
			}
			continue
		}
		sp.Kinds = append(sp.Kinds, k)
	}
	return sp, nil
}

// isClock says whether a kind's faults move a clock.
func isClock(k nemesis.Kind) bool {
	return k.Generate.Build(1, "A", 1).Fields().Effect == history.EffectClock
}

// classic are the shapes every hunt tries first, in this order: the
// failures the literature names, one fault each, at a size past the TTL
// (a pause after a grant, a clock jump or drift on a node, a delayed
// write), and the TTL trap, work that outlasts the TTL with no fault.
func (sp Space) classic() []Plan {
	var out []Plan
	for _, k := range sp.Kinds {
		g := mustDrawn(k)
		f := Fault{Kind: k, X: g.Classic}
		p := Plan{Work: 0.2, Gap: 1.05}
		switch {
		case g.OnNode:
			f.Node = "A"
			p = Plan{Work: 0.8, Gap: 0.4}
			if sp.Nodes > 1 { // a majority's clocks
				for i := 0; i < sp.Nodes/2+1; i++ {
					p.Faults = append(p.Faults, Fault{Kind: k, Node: scenarios.NodeName(i), X: f.X})
				}
				out = append(out, p)
				continue
			}
		default:
			f.Client = 1
		}
		p.Faults = []Fault{f}
		out = append(out, p)
	}
	return append(out, Plan{Work: 1.5, Gap: 1.05})
}

// swarm draws a plan from rng: each allowed kind in or out of the run
// (swarm testing: a fault left out cannot mask another), one to three
// faults, each with a value drawn from its kind's range, a target drawn
// among the clients or nodes it can strike, and the work and gap drawn.
func (sp Space) swarm(rng *rand.Rand) Plan {
	var in []string
	for _, k := range sp.Kinds {
		if rng.IntN(2) == 0 {
			in = append(in, k)
		}
	}
	p := Plan{Work: round2(0.1 + rng.Float64()*1.4), Gap: round2(0.1 + rng.Float64()*1.4)}
	if len(in) == 0 {
		return p
	}
	struck := map[[2]string]bool{} // a kind strikes each target once
	for n := 1 + rng.IntN(3); n > 0; n-- {
		k := in[rng.IntN(len(in))]
		g := mustDrawn(k)
		f := Fault{Kind: k, X: round2(g.Range[0] + rng.Float64()*(g.Range[1]-g.Range[0]))}
		if g.OnNode {
			f.Node = scenarios.NodeName(rng.IntN(sp.Nodes))
		} else {
			f.Client = 1 + rng.IntN(2)
		}
		target := [2]string{k, f.Node + strconv.Itoa(f.Client)}
		if struck[target] {
			continue
		}
		struck[target] = true
		p.Faults = append(p.Faults, f)
	}
	return p
}

func mustDrawn(kind string) nemesis.Generated {
	k, _ := nemesis.LookupKind(kind)
	return *k.Generate
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// Candidates returns the i-th candidate of a hunt with this seed: the
// classic shapes first, then swarm draws, each from its own seed, so
// any candidate is reproducible alone.
func (sp Space) Candidate(seed int64, i int) Plan {
	if c := sp.classic(); i < len(c) {
		return c[i]
	}
	s := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i)
	return sp.swarm(rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d)))
}
