package runner

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// unattributed says, for a generator trial whose check found the lock or
// the data violated, why no finding can be the schedule's: every finding
// lies in critical sections that no struck fault reached. A trial's
// verdict is earned by its fault; a lease that ran out because the machine
// delayed its holder's write (a busy PostgreSQL, a descheduled process)
// with no fault near it is the machine's doing, not the lock's under the
// fault, and the trial gets no verdict.
//
// A fault reaches a critical section (from the client's grant to the end
// of the operation in the finding) when its span, from its injection to
// its heal (or the trial's end), overlaps the section and it hits that
// client or no client in particular (a node's clock, a server); and, when
// the fault has a size that bounds what it does to a hold (a pause's
// length, a clock jump; not a network delay, which acts on every message),
// the section less that size still fits in its lease: a section that overran
// its lease by more than the fault can account for was stretched by the
// machine (a pause of 15ms in a 50ms lease does not explain a hold of
// 70ms).
func unattributed(events []history.Event, res checker.Result) (string, bool) {
	type window struct {
		from, to, size int64
		client         int
	}
	var faults []window
	end := int64(0)
	if n := len(events); n > 0 {
		end = events[n-1].Time
	}
	for i, e := range events {
		if e.Type != history.Fault {
			continue
		}
		w := window{from: e.Time, to: end}
		if e.Fault != nil {
			w.client = e.Fault.Client
			if e.Fault.Effect != history.EffectNetwork {
				// A pause stretches a hold by its length, a clock jump
				// shortens a lease by its size; a delay acts on every
				// message of the hold (a read-modify-write is two round
				// trips: a 300ms delay both ways stretched one by 1.2s).
				w.size = e.Fault.Size
			}
		}
		for _, h := range events[i+1:] {
			if h.Type == history.Heal && h.Op == e.Op && h.Target == e.Target {
				w.to = h.Time
				break
			}
		}
		faults = append(faults, w)
	}
	type section struct {
		client        int
		from, to, ttl int64
		what          string
	}
	// hold is client c's critical section that ended at t: from its last
	// grant (an acquire or extend that succeeded) before t, with the
	// grant's TTL.
	hold := func(c int, t int64, what string) section {
		s := section{client: c, to: t, what: what}
		for _, e := range events {
			if e.Time > t {
				break
			}
			if e.Process == c && e.Type == history.Ok && (e.Op == history.OpAcquire || e.Op == history.OpExtend) {
				s.from, s.ttl = e.Time, e.TTL
			}
		}
		return s
	}
	reached := func(s section) bool {
		for _, f := range faults {
			if f.from > s.to || f.to < s.from || (f.client != 0 && f.client != s.client) {
				continue
			}
			if f.size == 0 || s.ttl == 0 || s.to-s.from-f.size <= s.ttl {
				return true
			}
		}
		return false
	}
	var found [][]section
	write := func(c int, w history.Event) section { return hold(c, w.Time, fmt.Sprintf("its write #%d", w.Seq)) }
	for _, l := range res.Damage.LostUpdates {
		found = append(found, []section{write(l.ClientA, l.WriteA), write(l.ClientB, l.WriteB)})
	}
	for _, s := range res.Damage.StaleWrites {
		found = append(found, []section{write(s.Client, s.Write)})
	}
	for _, o := range res.Mutex.Overlaps {
		found = append(found, []section{hold(o.ClientA, o.To, "the overlap's end"), hold(o.ClientB, o.To, "the overlap's end")})
	}
	if len(found) == 0 {
		return "", false // findings of another kind (a fence gone backwards): not judged here
	}
	for _, f := range found {
		for _, s := range f {
			if reached(s) {
				return "", false
			}
		}
	}
	s := found[0][0] // the longest section tells it best
	for _, f := range found {
		for _, x := range f {
			if x.to-x.from > s.to-s.from {
				s = x
			}
		}
	}
	return fmt.Sprintf("the lock broke where no fault struck: client %d's critical section from its grant at t=%.3fs to %s at t=%.3fs (%v) met no fault that could stretch it past its lease; the machine delayed it",
		s.client, float64(s.from)/1e9, s.what, float64(s.to)/1e9, time.Duration(s.to-s.from).Round(time.Millisecond)), true
}
