// struck.go measures each fault of a generator trial as it struck, not as
// it was planned: a loaded machine sends a pause's SIGCONT late, runs the
// paused client later still, and keeps a write waiting at its server, so
// the critical section the fault aimed at lasts longer than planned. A
// trial whose section ended on the other side of its lease's end than
// planned (Struck.Off), whose fault never struck, or in which another
// client's write ran past its work by more than the margin, decides
// nothing about the fault's size: its verdict is withheld
// (history.Machine.OffPlan), whichever way it went.

package runner

import (
	"fmt"
	"slices"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
)

// StruckTolerance is how near, as a share of the TTL, a critical section
// may end to its lease's end before the measure cannot tell the side it
// ended on (Struck.Off); it is at least StruckToleranceFloor, the timers'
// own accuracy on an idle machine (toxiproxy's delays are whole
// milliseconds).
const (
	StruckTolerance      = 0.05
	StruckToleranceFloor = 2 * time.Millisecond
)

// Struck is one planned fault of a trial as it struck.
type Struck struct {
	Planned
	// At is when it struck, on the trial's history clock (ns).
	At int64
	// Want is how long the fault should have held up its client's
	// critical section: its kind's Outlasts of the planned size (a
	// pause's length; a delay's effect on the held write's round trip,
	// both ways). 0: not judged (a clock fault strikes at once; work of
	// an unbounded length hides it).
	Want time.Duration
	// Size is how long it held it up: from the strike (the write held
	// after its read) to the write's completion, less the work done in
	// between (Generator.Work). It holds everything the machine adds: a
	// SIGCONT sent late, a client run late, a write that waited for its
	// server.
	Size time.Duration
	// Work is the generator's mean work in a critical section.
	Work time.Duration
	// Signalled and Resumed are a client's pause from its SIGSTOP to its
	// SIGCONT, and to when the client ran again (the end of its own stall
	// report; the SIGCONT where none came). 0 for other faults.
	Signalled, Resumed time.Duration
	// Lead is how long the aimed critical section had run when the
	// fault struck: from the acquire's invocation to the strike (its
	// grant and its read; planned to be at once).
	Lead time.Duration
	// Overrun is how far past its lease the aimed critical section's
	// write completed: the write's completion less the acquire's
	// invocation and granted TTL (negative: within the lease). Overran
	// says it was measured (a held write and its acquire were seen).
	Overrun time.Duration
	Overran bool
	// heldSeq and heldDone are the held write's invocation (its Seq) and
	// completion time (0: none seen), for slowWrite.
	heldSeq, heldDone int64
}

// struckFault is a fault the schedule injected, for measuring after the
// trial.
type struckFault struct {
	p     Planned
	fault nemesis.Fault
	at    int64 // on the history clock
}

// tolerance is how near its lease's end a critical section may end
// before Off cannot tell the side it ended on, for leases of ttl.
func tolerance(ttl time.Duration) time.Duration {
	return max(time.Duration(StruckTolerance*float64(ttl)), StruckToleranceFloor)
}

// Off says how the fault struck off its plan, or "" when it did not in
// a way that could decide the trial: the aimed critical section was
// planned to end inside its lease or past it (its fault's Want plus the
// work, from its grant), and it ended on the other side, or within the
// tolerance of the lease's end where the plan was clear of it. A section
// that ran long on either side of the end it was planned to reach (a
// 3-TTL pause struck 3.1 TTL long; a 0.3-TTL pause after a slow read)
// decides the same as planned. "" too when not measured.
func (s Struck) Off(ttl time.Duration) string {
	if s.Want == 0 || s.Size == 0 || !s.Overran {
		return ""
	}
	tol := tolerance(ttl)
	planned := s.Want + s.Work - ttl
	near := func(d time.Duration) bool { return d < tol && d > -tol }
	if (planned > 0) == (s.Overrun > 0) && (!near(s.Overrun) || near(planned)) {
		return ""
	}
	side := func(d time.Duration) string {
		if d > 0 {
			return fmt.Sprintf("%.2f TTL past its lease", ttlOf(d, ttl))
		}
		return fmt.Sprintf("%.2f TTL inside its lease", ttlOf(-d, ttl))
	}
	return fmt.Sprintf("client %d's critical section was to end %s (%s %.2f TTL), and ended %s (%s %.2f TTL struck, %.2f TTL after its grant; tolerance %.2f TTL)",
		s.Client, side(planned), s.Fault, ttlOf(s.Want, ttl), side(s.Overrun), s.Fault, ttlOf(s.Size, ttl), ttlOf(s.Lead, ttl), ttlOf(tol, ttl))
}

func ttlOf(d, ttl time.Duration) float64 { return float64(d) / float64(ttl) }

// workSpread is how far a write's work may be off the generator's Work:
// fixed 0, uniform half of it; ok is false for exponential work, which
// has no bound.
func workSpread(g scenarios.Generator) (spread time.Duration, ok bool) {
	switch g.WorkDist {
	case "fixed":
		return 0, true
	case "exponential":
		return 0, false
	}
	return g.Work.Duration / 2, true
}

// measure measures the struck faults from the trial's history and the
// clients' stall reports (on CLOCK_MONOTONIC, as a pause's signals are);
// g is the trial's generator (its work between a write's read and its
// write).
func measure(struck []struckFault, events []history.Event, stalls map[int][]protocol.Stall, g scenarios.Generator) []Struck {
	_, bounded := workSpread(g)
	var out []Struck
	for _, sf := range struck {
		s := Struck{Planned: sf.p, At: sf.at, Work: g.Work.Duration}
		gen := scenarios.Generator{Fault: sf.p.Fault}.Generated()
		acquire, write, done := heldSection(events, sf.p.Client, sf.at)
		if write != nil {
			s.heldSeq = write.Seq
		}
		if done != nil {
			s.heldDone = done.Time
		}
		if gen != nil && gen.Outlasts != nil && !gen.Whole && bounded && write != nil && done != nil {
			s.Want = gen.Outlasts(sf.p.Size)
			s.Size = time.Duration(done.Time-sf.at) - g.Work.Duration
		}
		if pause, ok := nemesis.Unwrap(sf.fault).(*nemesis.Pause); ok && pause.Client != 0 {
			if stop, cont := pause.Signalled(); cont > stop && stop != 0 {
				s.Signalled, s.Resumed = time.Duration(cont-stop), measureSpan(stop, cont, stalls[pause.Client])
			}
		}
		if acquire != nil {
			s.Lead = time.Duration(sf.at - acquire.Time)
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
// (its ticker fires at once when it runs), or the SIGCONT (cont) where no
// report came or where it ends first (the SIGCONT's instant is read just
// after the signal is sent).
func measureSpan(stop, cont int64, stalls []protocol.Stall) time.Duration {
	ran := cont
	for _, st := range stalls {
		if st.From <= stop && st.To > stop {
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

// escaped says which planned client fault never struck (its client
// reached no critical section in time: a loaded machine's), "" when every
// one did: the trial was not the one planned.
func escaped(plan []Planned, struck []Struck) string {
	for _, p := range plan {
		if gen := (scenarios.Generator{Fault: p.Fault}).Generated(); gen == nil || gen.Whole {
			continue
		}
		if !slices.ContainsFunc(struck, func(s Struck) bool { return s.Planned == p }) {
			return fmt.Sprintf("%s never struck: its client reached no critical section in time", p)
		}
	}
	return ""
}

// slowWrite says which write ran past its work by more than margin (the
// timing guard's, as a stall of its client would be judged) while the
// struck faults had their effect (from the first strike to the last held
// write's completion), other than the held writes themselves (Struck
// measures those): a client kept waiting at its server there can decide
// whether the aimed write is overtaken. "" when none did, or when the
// work has no bound.
func slowWrite(events []history.Event, struck []Struck, g scenarios.Generator, margin time.Duration) string {
	spread, bounded := workSpread(g)
	if !bounded || len(struck) == 0 {
		return ""
	}
	from, to := struck[0].At, int64(0)
	held := map[int64]bool{} // the held writes, by their invocation's Seq
	for _, s := range struck {
		from = min(from, s.At)
		if s.heldSeq != 0 {
			held[s.heldSeq] = true
		}
		to = max(to, s.heldDone)
	}
	if to == 0 {
		return ""
	}
	limit := g.Work.Duration + spread + margin
	invoked := map[int]*history.Event{}
	for i := range events {
		e := &events[i]
		if e.Op != history.OpWrite || e.Process == 0 {
			continue
		}
		if e.Type == history.Invoke {
			invoked[e.Process] = e
			continue
		}
		w := invoked[e.Process]
		delete(invoked, e.Process)
		if w == nil || held[w.Seq] || e.Time < from || w.Time > to {
			continue
		}
		if took := time.Duration(e.Time - w.Time); took > limit {
			return fmt.Sprintf("client %d's write took %v, its work %v, more than the %v margin past it, while the fault had its effect",
				e.Process, took.Round(100*time.Microsecond), g.Work.Duration, margin)
		}
	}
	return ""
}
