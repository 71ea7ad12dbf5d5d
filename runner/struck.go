// struck.go measures each fault of a generator trial as it struck, not as
// it was planned: a loaded machine sends a pause's SIGCONT late and runs
// the paused client later still, and a delayed write lands later than its
// link's delay. A trial whose fault struck off its planned size by more
// than StruckTolerance decides nothing about that size: its verdict is
// withheld (history.Machine.OffPlan), whichever way it went.

package runner

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
)

// StruckTolerance is how far, as a share of the TTL, a fault may strike
// off its planned size before the trial's verdict is withheld; it is at
// least StruckToleranceFloor, the timers' own accuracy on an idle
// machine (toxiproxy's delays are whole milliseconds).
const (
	StruckTolerance      = 0.05
	StruckToleranceFloor = 2 * time.Millisecond
)

// Struck is one planned fault of a trial as it struck.
type Struck struct {
	Planned
	// At is when it struck, on the trial's history clock (ns).
	At int64
	// Want is the size it should have had as struck: its kind's
	// Outlasts of the planned size (a pause's length; a delay's effect on
	// the held write's round trip, both ways). 0: not measured (a clock
	// fault strikes at once).
	Want time.Duration
	// Size is the size it had: a client's pause from its SIGSTOP to the
	// moment the client ran again (its own stall report; the SIGCONT
	// where none came); a delay the held write's own, from the strike (the
	// write held after its read) to its completion, less the work the
	// generator does before it writes.
	Size time.Duration
	// Signalled is a pause's span from its SIGSTOP to its SIGCONT (0 for
	// other faults).
	Signalled time.Duration
	// Overrun is how far past its lease the aimed critical section's
	// write completed: the write's completion less the acquire's
	// invocation and granted TTL (negative: within the lease). Overran
	// says it was measured (a held write and its acquire were seen).
	Overrun time.Duration
	Overran bool
}

// struckFault is a fault the schedule injected, for measuring after the
// trial.
type struckFault struct {
	p     Planned
	fault nemesis.Fault
	at    int64 // on the history clock
}

// Off says how the fault struck off its plan, in TTLs ("pause 0.80 TTL
// planned, 0.86 TTL struck"), or "" when within the tolerance or not
// measured.
func (s Struck) Off(ttl time.Duration) string {
	if s.Want == 0 || s.Size == 0 {
		return ""
	}
	tol := max(time.Duration(StruckTolerance*float64(ttl)), StruckToleranceFloor)
	if d := s.Size - s.Want; d <= tol && d >= -tol {
		return ""
	}
	return fmt.Sprintf("%s %.2f TTL planned, %.2f TTL struck (tolerance %.2f TTL)", s.Fault, ttlOf(s.Want, ttl), ttlOf(s.Size, ttl), ttlOf(tol, ttl))
}

func ttlOf(d, ttl time.Duration) float64 { return float64(d) / float64(ttl) }

// measure measures the struck faults from the trial's history and the
// clients' stall reports (on CLOCK_MONOTONIC, as a pause's signals are);
// work is the generator's work between a write's read and its write.
func measure(struck []struckFault, events []history.Event, stalls map[int][]worker.Stall, work time.Duration) []Struck {
	var out []Struck
	for _, sf := range struck {
		s := Struck{Planned: sf.p, At: sf.at}
		gen := scenarios.Generator{Fault: sf.p.Fault}.Generated()
		if gen != nil && gen.Outlasts != nil && !gen.Whole {
			s.Want = gen.Outlasts(sf.p.Size)
		}
		acquire, write, done := heldSection(events, sf.p.Client, sf.at)
		if pause, ok := sf.fault.(*nemesis.Pause); ok && pause.Client != 0 {
			stop, cont := pause.Signalled()
			if cont > stop && stop != 0 {
				s.Signalled = time.Duration(cont - stop)
				s.Size = measureSpan(stop, cont, stalls[pause.Client])
			}
		} else if gen != nil && gen.UntilSectionEnds && write != nil && done != nil {
			s.Size = time.Duration(done.Time-sf.at) - work
		}
		if acquire != nil && done != nil && acquire.TTL > 0 {
			s.Overrun, s.Overran = time.Duration(done.Time-(acquire.Time+acquire.TTL)), true
		}
		out = append(out, s)
	}
	return out
}

// measureSpan is a pause from its SIGSTOP (stop) to when its client ran
// again: the end of the client's stall report that covers the SIGSTOP
// and ends after the SIGCONT (cont; its ticker fires at once when it
// runs), or the SIGCONT where no report came.
func measureSpan(stop, cont int64, stalls []worker.Stall) time.Duration {
	ran := cont
	for _, st := range stalls {
		if st.From <= stop && st.To >= cont {
			ran = max(ran, st.To)
		}
	}
	return time.Duration(ran - stop)
}

// heldSection finds the critical section of client in which a fault
// struck at time at: the acquire invocation before it (with the TTL its
// grant applied), and the first write to complete after it (a
// read-modify-write invoked before the strike, held after its read) with
// its completion (nil: none came).
func heldSection(events []history.Event, client int, at int64) (acquire, write, done *history.Event) {
	var invoked, current *history.Event
	for i := range events {
		e := &events[i]
		if e.Process != client {
			continue
		}
		switch {
		case e.Op == history.OpAcquire && e.Time <= at && e.Type == history.Invoke:
			invoked = e
		case e.Op == history.OpAcquire && e.Time <= at && e.Type == history.Ok && invoked != nil:
			a := *invoked
			a.TTL = e.TTL
			acquire = &a
		case e.Op != history.OpWrite || done != nil:
		case e.Type == history.Invoke:
			current = e
		case current != nil && e.Time > at:
			write, done = current, e
		default:
			current = nil // completed before the strike
		}
	}
	if write == nil {
		write = current
	}
	return acquire, write, done
}
