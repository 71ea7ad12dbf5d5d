package checker

import (
	"fmt"

	"github.com/locksim/locksim/history"
)

// Finding is one piece of evidence of a check: its kind, a sentence that
// says it, and the events that prove it.
type Finding struct {
	// Kind is one of the Finding kinds below.
	Kind     string
	Sentence string
	Events   []history.Event
	// Bad is false for evidence of a defence working (a refused write).
	Bad bool
}

// Kinds of Finding.
const (
	FindingLostUpdate     = "lost update"
	FindingStaleWrite     = "stale write"
	FindingTokenBackwards = "token backwards"
	FindingOverlap        = "overlap"
	FindingLeak           = "leak"
	FindingStall          = "stall"
	FindingRefusedWrite   = "refused write"
	FindingRanTwice       = "job ran twice"
)

// Findings lists the evidence of the check, worst first: every lost
// update, stale write, job run twice, token gone backwards, overlap, leak and stall it
// kept, then the writes the fence refused.
func (r Result) Findings() []Finding {
	var out []Finding
	for _, l := range r.Damage.LostUpdates {
		out = append(out, Finding{Kind: FindingLostUpdate, Bad: true, Events: []history.Event{l.WriteA, l.WriteB},
			Sentence: fmt.Sprintf("clients %d and %d both read %d from %s and both writes were accepted: one update is lost", l.ClientA, l.ClientB, l.Read, l.Key)})
	}
	for _, s := range r.Damage.StaleWrites {
		out = append(out, Finding{Kind: FindingStaleWrite, Bad: true, Events: []history.Event{s.Write},
			Sentence: fmt.Sprintf("storage accepted client %d's write on %s based on a stale read of %d: %s", s.Client, s.Key, s.Read, s.Detail)})
	}
	for _, t := range r.Jobs.RanTwice {
		out = append(out, Finding{Kind: FindingRanTwice, Bad: true, Events: t.Rows, Sentence: t.Sentence()})
	}
	for _, b := range r.Fencing.Backwards {
		out = append(out, Finding{Kind: FindingTokenBackwards, Bad: true, Events: []history.Event{b.Earlier, b.Event},
			Sentence: fmt.Sprintf("fencing token %d (%s) came after %d on %s", b.Fence, b.Kind, b.Previous, b.Key)})
	}
	for _, o := range r.Mutex.Overlaps {
		out = append(out, Finding{Kind: FindingOverlap, Bad: true, Events: []history.Event{o.AcquireA, o.AcquireB}, Sentence: o.Sentence()})
	}
	for _, l := range r.Liveness.Leaks {
		evs := []history.Event{l.Acquire, l.Release, l.FailedAcquire}
		if l.Gone == NeverHeld {
			evs = []history.Event{l.FailedAcquire}
		}
		out = append(out, Finding{Kind: FindingLeak, Bad: true, Events: evs, Sentence: l.Sentence()})
	}
	for _, s := range r.Liveness.Stalls {
		out = append(out, Finding{Kind: FindingStall, Bad: true, Events: []history.Event{s.Since, s.Failed},
			Sentence: fmt.Sprintf("no acquire of %s granted between %s and %s (%d attempts)", s.Key, secs(s.From), secs(s.To), s.Attempts)})
	}
	if len(r.Fencing.RefusedWrites) > 0 {
		out = append(out, Finding{Kind: FindingRefusedWrite, Events: r.Fencing.RefusedWrites,
			Sentence: fmt.Sprintf("the fence refused %d stale write(s): the defence working", r.Fencing.Refused)})
	}
	return out
}

// Sentence says who held the lock at once, and when.
func (o Overlap) Sentence() string {
	return fmt.Sprintf("clients %d and %d both held %s between %s and %s", o.ClientA, o.ClientB, o.Key, secs(o.From), secs(o.To))
}
