package hunt

// timeline.go lays a plan out as a story's steps. A story is a script:
// each step starts when the one before it ends, and a step of a client
// still busy (paused, or slowed by a delay) waits for it. So each
// client's operations are placed when that client can take them (after a
// pause of it, after its slowed write), and the others' steps come
// before them when they are due earlier: a paused holder does not hold
// up the next client's acquire.

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// item is a step or steps of the timeline at time t (in TTLs); at one
// time, rank orders them (a release before an acquire, a fault after
// the event it is anchored to), then the order they were added.
type item struct {
	t         float64
	rank, seq int
	steps     []step
	// takes is how long the steps hold up the script (a synchronous
	// acquire slowed by a delay or a partition), in TTLs.
	takes float64
}

// ranks of the items at one time.
const (
	rankStart    = 0
	rankRelease  = 5
	rankReleased = 6
	rankAcquire  = 10
	rankAsks     = 11
	rankWaitAcq  = 12
	rankGranted  = 13
	rankWrite    = 14
	rankRead     = 15
)

// clientOps are one client's operations, placed.
type clientOps struct {
	acquire, granted, write, writeEnd, release, releaseEnd float64
}

// timeline places plan p's steps (writes: the clients write the storage;
// nodeTimeout: the story's node_timeout) and returns them, the final
// heal included.
func timeline(p Plan, writes bool, ttl, nodeTimeout time.Duration) ([]step, error) {
	for _, fl := range p.Faults {
		anchored := fl.At.Event != Start && fl.At.Event != ""
		if fl.Client > len(p.Turns) || anchored && (fl.At.Client < 1 || fl.At.Client > len(p.Turns)) {
			return nil, fmt.Errorf("%s: the plan has %d clients", fl.Describe(ttl), len(p.Turns))
		}
	}
	ops := make([]clientOps, len(p.Turns))
	faultAt := make([]float64, len(p.Faults))
	// anchorAt is when an anchor's event happens, as last placed.
	anchorAt := func(a Anchor) float64 {
		if a.Event == Start || a.Event == "" {
			return 0
		}
		o := ops[a.Client-1]
		switch a.Event {
		case Asks:
			return o.acquire
		case Granted:
			return o.granted
		case Read:
			return o.write
		}
		return o.release
	}
	for c, t := range p.Turns { // as due, nothing slowed
		ops[c] = clientOps{acquire: t.At, granted: t.At, write: t.At, writeEnd: t.At + t.Work, release: t.At + t.Work}
	}
	// Place the faults at their anchors, then each client's operations
	// where its pauses and delays let it take them; again, since a fault
	// anchored to a moved event moves with it.
	for round := 0; round < 3; round++ {
		for i, fl := range p.Faults {
			faultAt[i] = anchorAt(fl.At) + fl.After
		}
		for c := range p.Turns {
			ops[c] = place(p, c+1, faultAt, writes, float64(nodeTimeout)/float64(ttl))
		}
	}

	var items []item
	add := func(t float64, rank int, steps ...step) *item {
		items = append(items, item{t: t, rank: rank, seq: len(items), steps: steps})
		return &items[len(items)-1]
	}
	asyncAcquire := map[int]bool{}
	for i, fl := range p.Faults {
		st, err := faultStep(fl, ttl)
		if err != nil {
			return nil, err
		}
		rank := map[string]int{"": rankStart, Start: rankStart, Asks: rankAsks, Granted: rankGranted, Read: rankRead, Released: rankReleased}[fl.At.Event]
		if fl.At.Event == Asks {
			asyncAcquire[fl.At.Client] = true
		}
		add(faultAt[i], rank, st)
	}
	at := func(x float64) scenarios.Duration { return dur(time.Duration(x * float64(ttl))) }
	for i, o := range ops {
		c := i + 1
		if asyncAcquire[c] {
			add(o.acquire, rankAcquire, step{Do: "acquire", Client: c, Async: true})
			add(o.granted, rankWaitAcq, step{Do: "wait", Client: c})
		} else {
			add(o.acquire, rankAcquire, step{Do: "acquire", Client: c}).takes = o.granted - o.acquire
		}
		if writes {
			add(o.write, rankWrite, step{Do: "write", Client: c, Work: at(p.Turns[i].Work), Async: true})
			add(o.release, rankRelease, step{Do: "wait", Client: c}, step{Do: "release", Client: c}).takes = o.releaseEnd - o.release
		} else {
			add(o.release, rankRelease, step{Do: "release", Client: c}).takes = o.releaseEnd - o.release
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var steps []step
	now := 0.0
	for i, it := range items {
		if i > 0 && items[i-1].rank == rankWrite && it.rank == rankRead && it.t-now < 0.005 {
			// The read is done before a fault of the work strikes.
			steps = append(steps, step{Do: "sleep", For: scenarios.Duration{Duration: 10 * time.Millisecond}})
		}
		if it.t-now >= 0.005 {
			d := round2(it.t - now)
			steps = append(steps, step{Do: "sleep", For: at(it.t - now), Say: fmt.Sprintf("Time passes: %s (%s).", at(it.t-now), fmtTTL(d))})
			now = it.t
		}
		steps = append(steps, it.steps...)
		now = max(now, it.t+it.takes)
	}
	return append(steps, step{Do: "heal"}), nil
}

// place is when client c can take its operations, given the faults
// placed at faultAt: each no earlier than due, nor than its previous
// one ends, nor inside a pause of the client; a delay on its links
// slows each operation after it (a round trip each way for an acquire
// or a release, four for a write's transaction), and a partition of
// some of its lock's links by nodeTimeout (TTLs: the client waits that
// long for the nodes cut off); a pause overlapping an operation
// lengthens it by the pause.
func place(p Plan, c int, faultAt []float64, writes bool, nodeTimeout float64) clientOps {
	turn := p.Turns[c-1]
	// A pause strikes the client's operations after it; one anchored to
	// the client's own event strikes only those after that event (a
	// pause once it has read does not hold up its acquire).
	type pause struct {
		from, to float64
		after    int // the client's own event it follows (its index in Events, +1), 0: none
	}
	var pauses []pause
	lockDelay := func(t float64) (d float64) {
		d = delayOn(p, c, faultAt, t, false)
		for i, fl := range p.Faults {
			if kindOf(fl.Kind).Shape.Silences && fl.Client == c && faultAt[i] <= t {
				return d + nodeTimeout/2 // lockDelay counts each way
			}
		}
		return d
	}
	storeDelay := func(t float64) (d float64) { return delayOn(p, c, faultAt, t, true) }
	for i, fl := range p.Faults {
		if kindOf(fl.Kind).Effect == history.EffectPause && fl.Client == c {
			ps := pause{from: faultAt[i], to: faultAt[i] + fl.X}
			if fl.At.Client == c {
				ps.after = slices.Index(Events, fl.At.Event) + 1
			}
			pauses = append(pauses, ps)
		}
	}
	// run places operation op (its event's index in Events, +1) due at t
	// that takes d: its start and end.
	run := func(op int, t, d float64) (float64, float64) {
		for _, ps := range pauses {
			if op > ps.after && t >= ps.from && t < ps.to {
				t = ps.to
			}
		}
		end := t + d
		for _, ps := range pauses {
			if (ps.from > t || (ps.from == t && op <= ps.after)) && ps.from < end {
				end += ps.to - ps.from
			}
		}
		return t, end
	}
	const asks, read, released = 1, 3, 4 // Events' indices, +1
	var o clientOps
	var acqEnd float64
	o.acquire, acqEnd = run(asks, turn.At, 2*lockDelay(turn.At))
	o.granted = acqEnd
	for i, fl := range p.Faults { // the acquire waits for the faults struck while it waits
		if fl.At == (Anchor{Client: c, Event: Asks}) {
			o.granted = max(o.granted, faultAt[i])
		}
	}
	o.write, o.writeEnd = o.granted, o.granted+turn.Work
	if writes {
		o.write, o.writeEnd = run(read, o.granted, turn.Work+8*storeDelay(o.granted))
	}
	o.release, o.releaseEnd = run(released, max(turn.At+turn.Work, o.writeEnd), 2*lockDelay(o.writeEnd))
	return o
}

// kindOf is the registered kind of a plan's fault: what the timeline
// needs of it is what its kind says (its effect, its shape), never its name.
func kindOf(name string) nemesis.Kind {
	k, _ := nemesis.LookupKind(name)
	return k
}

// delayOn is the delay, in TTLs, that latency faults struck by time t
// put on client c's links to the storage (storage) or to the lock.
func delayOn(p Plan, c int, faultAt []float64, t float64, storage bool) float64 {
	d := 0.0
	for i, fl := range p.Faults {
		if !kindOf(fl.Kind).Shape.Delays || fl.Client != c || faultAt[i] > t {
			continue
		}
		links := fl.Links
		if len(links) == 0 { // the kind's draw: the storage link
			links = []string{nemesis.StorageNode}
		}
		if slices.Contains(links, nemesis.StorageNode) == storage {
			d += fl.X
		}
	}
	return d
}
