// schedule.go draws a generator trial's fault schedule from its seed: when
// each fault starts, which client or node it aims at and how big it is.
// The same seed gives the same schedule, whatever the lock under test, so
// that locks compared at one sweep point face the same faults.

package runner

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// Planned is one fault of a trial's schedule.
type Planned struct {
	// At is when the fault is armed, from the start of the trial. Pause,
	// clock-jump and latency then wait for Client's next critical section
	// (its next write) and strike at its start; clock-drift strikes at At.
	At time.Duration `json:"at"`
	// Fault is a generator fault kind (scenarios.GeneratorFaults).
	Fault string `json:"fault"`
	// Client is the client whose critical section is aimed at (1-based).
	Client int `json:"client"`
	// Node is the Redis node a clock fault hits ("" for client faults).
	Node string `json:"node,omitempty"`
	// Size is a pause's length, a jump's size or a latency's delay.
	Size time.Duration `json:"size,omitempty"`
	// Rate is a clock drift's rate.
	Rate float64 `json:"rate,omitempty"`
}

// drawn is the planned fault's drawn value, as its kind's Build takes it.
func (p Planned) drawn(gen *nemesis.Generated) float64 {
	if gen.Unit == nemesis.UnitRate {
		return p.Rate
	}
	return float64(p.Size)
}

func (p Planned) String() string {
	gen := scenarios.Generator{Fault: p.Fault}.Generated()
	switch {
	case gen != nil && gen.Whole:
		return fmt.Sprintf("at %v: %s x%g on %s", p.At, p.Fault, p.Rate, p.Node)
	case gen != nil && gen.OnNode:
		return fmt.Sprintf("at %v: %s %v on %s during client %d's critical section", p.At, p.Fault, p.Size, p.Node, p.Client)
	}
	return fmt.Sprintf("at %v: %s %v of client %d during its critical section", p.At, p.Fault, p.Size, p.Client)
}

// TrialSeed derives the seed of trial `trial` at sweep point `point` from
// the run's seed (splitmix64), so every trial's draws are independent and
// reproducible.
func TrialSeed(seed int64, point, trial int) uint64 {
	x := uint64(seed)
	for _, v := range []uint64{uint64(point), uint64(trial)} {
		x = splitmix(x ^ splitmix(v+0x9e3779b97f4a7c15))
	}
	return x
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Schedule draws the faults of one trial. Faults start in the first third
// of the trial (after a tenth of it, once every client is looping), one in
// each equal slot of that window, so that the other clients keep looping
// long after each fault: a lease that expires during a pause is taken by
// someone else. clients and nodes say what the environment has; a clock
// fault on a lock without Redis nodes is left out.
func Schedule(g scenarios.Generator, clients, nodes int, seed uint64) []Planned {
	if g.Fault == "none" || g.Faults == 0 || clients < 1 {
		return nil
	}
	gen := g.Generated()
	if gen == nil || (gen.OnNode && nodes == 0) {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	d := g.Duration.Duration
	from, to := d/10, d/3
	slot := (to - from) / time.Duration(g.Faults)
	var plan []Planned
	for i := 0; i < g.Faults; i++ {
		p := Planned{Fault: g.Fault, Client: 1 + rng.IntN(clients)}
		p.At = from + time.Duration(i)*slot
		if slot > 0 {
			p.At += time.Duration(rng.Int64N(int64(slot)))
		}
		if gen.Unit == nemesis.UnitRate {
			p.Rate = g.Size
		} else {
			p.Size = time.Duration(g.Size)
		}
		if gen.OnNode {
			p.Node = scenarios.NodeName(rng.IntN(nodes))
		}
		if gen.Whole {
			p.At = 0
		}
		plan = append(plan, p)
	}
	return plan
}

// loopDuration is how long the clients loop in a trial with this plan: the
// generator's duration, or longer, so that the clients still loop for
// settle after the last fault has run its course (a pause has ended, a
// delayed write has landed), however late within armWait its client's
// critical section began.
func loopDuration(g scenarios.Generator, plan []Planned, settle time.Duration) time.Duration {
	d := g.Duration.Duration
	for _, p := range plan {
		end := p.At + settle
		if gen := g.Generated(); gen != nil {
			if gen.Outlasts != nil {
				end += gen.Outlasts(p.Size)
			}
			if !gen.Whole {
				end += armWait(g)
			}
		}
		d = max(d, end)
	}
	return d
}

// armWait is how long after its time a fault aimed at a client's critical
// section waits for the client to enter one: three trial lengths. A client
// that has not entered one by then escapes the fault. Without the bound,
// a pause that struck 129ms late (its client kept losing the race for the
// lock) began after the other clients' loops had been timed to end: they
// stopped before the paused holder's lease ran out, and the trial showed
// no damage at a pause of 3 TTLs. With one trial length (60ms), 8 of 30
// trials of gen-pause at 3 TTLs escaped (a client that keeps losing the
// race for the lock); with three, none of 30. The loops are timed for
// the latest strike but stopped once the faults have run their course
// (Play, protocol.OpStopLoop), so the wait costs nothing when a fault
// strikes early.
func armWait(g scenarios.Generator) time.Duration { return 3 * g.Duration.Duration }
