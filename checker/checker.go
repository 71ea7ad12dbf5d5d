// Package checker turns a history into a verdict: mutual exclusion of the
// lock as its clients saw it (porcupine), damage to the protected counter
// (porcupine), fencing, and liveness; each reports its own outcome and the
// events that prove its findings.
package checker

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/history"
)

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) the
// sim binary runs under unless GOMEMLIMIT is set: the garbage collector
// works harder instead of letting the heap double, which keeps a check of
// a 100,000-operation history under 200 MB of RSS at no measurable cost in
// time (BenchmarkCheck100kRSS).
const MemoryLimit = 160 << 20

// Options tune a check.
type Options struct {
	// Timeout bounds each porcupine check (default 10s); a check that runs
	// out of time is unknown, never a violation.
	Timeout time.Duration
	// MaxGap, when positive, makes a span longer than this with acquires
	// attempted and none granted a liveness failure.
	MaxGap time.Duration
}

// Verdict is what a check of a history decided: Safe, Unsafe, Leaked,
// Hung or Unknown, ranked by Rank.
type Verdict string

// Verdicts.
const (
	Safe   Verdict = "safe"
	Unsafe Verdict = "unsafe"
	Leaked Verdict = "leaked"
	// Hung is a call that never returned within its bound: the harness
	// killed its client and ended the story there (runner.Judge). A
	// liveness failure of its own, not a lock held with no live holder.
	Hung    Verdict = "hung"
	Unknown Verdict = "unknown"
)

// Rank orders the verdicts as Jepsen's compose does: proven findings
// outrank a check that decided nothing, which outranks safe: unsafe 3,
// leaked and hung 2 (liveness failures, neither worse than the other),
// unknown 1, safe (or anything else) 0.
func Rank(v Verdict) int {
	switch v {
	case Unsafe:
		return 3
	case Leaked, Hung:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

// Worse says whether verdict a is worse for the protected data than b:
// unsafe is worse than leaked or hung, those than safe (Rank). An unknown
// verdict is worse than nothing and nothing is worse than it: it decides
// nothing.
func Worse(a, b Verdict) bool {
	decided := func(v Verdict) bool { return v == Safe || v == Leaked || v == Hung || v == Unsafe }
	return decided(a) && decided(b) && Rank(a) > Rank(b)
}

// Result is what a check found.
type Result struct {
	// Verdict is, first match wins: unsafe (damage, a job run twice, a
	// broken fence, or,
	// with no protected write in the history, two clients holding the
	// lock at once), leaked (a liveness failure), unknown (a porcupine
	// check timed out) or safe.
	Verdict Verdict `json:"verdict"`
	// Summary is one sentence that says why.
	Summary string `json:"summary"`
	// Violations counts the distinct findings: overlapping holds, lost
	// updates, stale writes, tokens gone backwards, leaks, stalls and
	// jobs run twice.
	Violations int            `json:"violations"`
	Mutex      MutexResult    `json:"mutex"`
	Damage     DamageResult   `json:"damage"`
	Fencing    FencingResult  `json:"fencing"`
	Liveness   LivenessResult `json:"liveness"`
	Jobs       JobsResult     `json:"jobs"`
	// Notice is how long after the servers gave a held lock away its
	// holder learned it, and how long two clients both believed they
	// held one (Notices): measured, not judged.
	Notice Notice `json:"notice"`
	// Derived is what the check derived on the way, for the reports to
	// draw (Derived.Holds, Derived.Visualize). It is not in result.json:
	// a Result read back from it has none.
	Derived *Derived `json:"-"`
}

// Check validates a history (history.Validate) and runs the four checkers
// on it. An invalid history gets no verdict: the error says which rule it
// breaks.
//
// The history is parsed while it is validated, and the checkers, which
// only read the parsed history, run side by side.
func Check(events []history.Event, o Options) (Result, error) {
	parsed := make(chan *parsed, 1)
	go func() { parsed <- parse(events) }()
	if err := history.Validate(events); err != nil {
		return Result{}, err
	}
	p := <-parsed
	var r Result
	d := &Derived{p: p}
	var wg sync.WaitGroup
	wg.Go(func() { r.Mutex, d.holds, d.info = checkMutex(p, o) })
	wg.Go(func() { r.Damage = checkDamage(p, o) })
	r.Fencing = checkFencing(p)
	r.Liveness = checkLiveness(p, o)
	r.Jobs = checkJobs(p)
	r.Notice = notices(p)
	wg.Wait()
	r.Derived = d
	r.Violations = r.Mutex.OverlapCount + r.Damage.LostUpdateCount + r.Damage.StaleWriteCount +
		r.Fencing.BackwardsCount + r.Liveness.LeakCount + len(r.Liveness.Stalls) + r.Jobs.RanTwiceCount

	// Proven findings outrank a check that ran out of time, as in
	// Jepsen's compose: unsafe, then leaked, then unknown.
	// A write the storage accepted below a fence it had accepted is a
	// stale write accepted: damage. A grant whose token went backwards
	// breaks the lock's fencing contract, but the data is damaged only if
	// a write proves it: with protected writes in the story, it is a
	// finding beside the verdict, as an overlap is.
	damaged := r.Damage.Outcome == OutcomeIllegal || r.Damage.LostUpdateCount+r.Damage.StaleWriteCount+r.Fencing.writeBackwards()+r.Jobs.RanTwiceCount > 0
	lockBroken := r.Mutex.Outcome == OutcomeIllegal || r.Mutex.OverlapCount > 0 || r.Fencing.BackwardsCount > 0
	switch {
	case damaged || (p.writes == 0 && lockBroken):
		r.Verdict = Unsafe
	case r.Liveness.Outcome == OutcomeIllegal:
		r.Verdict = Leaked
	case r.Mutex.Outcome == OutcomeUnknown || r.Damage.Outcome == OutcomeUnknown:
		r.Verdict = Unknown
	default:
		r.Verdict = Safe
	}
	r.Summary = summarize(&r, p, o)
	return r, nil
}

// Why is a Summary without the verdict it opens with ("unsafe: lost
// update on L..." says "lost update on L..."), for a sentence that names
// the verdict itself.
func Why(v Verdict, summary string) string { return strings.TrimPrefix(summary, string(v)+": ") }

func summarize(r *Result, p *parsed, o Options) string {
	var which []string // the checks that ran out of time
	if r.Mutex.Outcome == OutcomeUnknown {
		which = append(which, fmt.Sprintf("mutual exclusion (%d operations)", r.Mutex.Operations))
	}
	if r.Damage.Outcome == OutcomeUnknown {
		which = append(which, fmt.Sprintf("damage (%d writes)", r.Damage.Accepted+r.Damage.Unknown))
	}
	timedOut := fmt.Sprintf("the %s check timed out after %s", joinAnd(which), o.timeout())
	more := func(s string) string {
		if r.Violations > 1 {
			s = fmt.Sprintf("%s (%d findings in all)", s, r.Violations)
		}
		if len(which) > 0 {
			s += "; " + timedOut
		}
		return s
	}
	switch r.Verdict {
	case Unknown:
		s := "unknown: " + timedOut
		if r.Violations > 0 {
			s += fmt.Sprintf(" (%d findings so far)", r.Violations)
		}
		return s
	case Unsafe:
		switch {
		case len(r.Damage.LostUpdates) > 0:
			l := r.Damage.LostUpdates[0]
			return more(fmt.Sprintf("unsafe: lost update on %s: client %d's write #%d (%s) and client %d's write #%d (%s) both read %d and both were accepted",
				l.Key, l.ClientA, l.WriteA.Seq, secs(l.WriteA.Time), l.ClientB, l.WriteB.Seq, secs(l.WriteB.Time), l.Read))
		case len(r.Damage.StaleWrites) > 0:
			s := r.Damage.StaleWrites[0]
			return more(fmt.Sprintf("unsafe: storage accepted client %d's stale write #%d on %s at %s: it %s",
				s.Client, s.Write.Seq, s.Key, secs(s.Write.Time), s.Detail))
		case len(r.Fencing.Backwards) > 0:
			b := r.Fencing.Backwards[0]
			what := "an acquire was granted"
			if b.Kind == "write" {
				what = "storage accepted a write with"
			}
			return more(fmt.Sprintf("unsafe: the fencing token went backwards on %s: %s fence %d (#%d by client %d, %s) after fence %d (#%d by client %d, %s)",
				b.Key, what, b.Fence, b.Event.Seq, b.Event.Process, secs(b.Event.Time), b.Previous, b.Earlier.Seq, b.Earlier.Process, secs(b.Earlier.Time)))
		case len(r.Jobs.RanTwice) > 0:
			return more("unsafe: " + r.Jobs.RanTwice[0].Sentence())
		case r.Damage.Outcome == OutcomeIllegal:
			return more("unsafe: no order of the accepted writes explains the values they read")
		case len(r.Mutex.Overlaps) > 0:
			return more("unsafe: " + describeOverlap(r.Mutex.Overlaps[0]))
		}
		return more("unsafe: no order of the lock's grants and releases keeps one holder at a time")
	case Leaked:
		if len(r.Liveness.Leaks) > 0 {
			l := r.Liveness.Leaks[0]
			return more("leaked: " + l.Sentence())
		}
		s := r.Liveness.Stalls[0]
		return more(fmt.Sprintf("leaked: no acquire of %s was granted between %s and %s (%d attempts refused, longer than %s)",
			s.Key, secs(s.From), secs(s.To), s.Attempts, o.MaxGap))
	}
	// Safe.
	if len(r.Fencing.Backwards) > 0 {
		b := r.Fencing.Backwards[0]
		return fmt.Sprintf("safe, but the fencing token went backwards on %s: an acquire was granted fence %d (#%d by client %d, %s) after fence %d (#%d by client %d, %s); the data stayed intact: %d writes accepted with no lost update or stale write",
			b.Key, b.Fence, b.Event.Seq, b.Event.Process, secs(b.Event.Time), b.Previous, b.Earlier.Seq, b.Earlier.Process, secs(b.Earlier.Time), r.Damage.Accepted)
	}
	if len(r.Mutex.Overlaps) > 0 {
		s := "safe, but the lock was violated: " + describeOverlap(r.Mutex.Overlaps[0])
		if r.Mutex.OverlapCount > 1 {
			s += fmt.Sprintf(" (%d overlaps in all)", r.Mutex.OverlapCount)
		}
		s += fmt.Sprintf("; the data stayed intact: %d writes accepted with no lost update or stale write", r.Damage.Accepted)
		if r.Damage.Refused > 0 {
			s += fmt.Sprintf(", %d refused", r.Damage.Refused)
			if r.Fencing.Refused > 0 {
				s += " by the fence"
			}
		}
		return s
	}
	s := fmt.Sprintf("safe: %d holds with no overlap", r.Mutex.Holds)
	if r.Damage.Outcome != OutcomeSkipped {
		s += fmt.Sprintf(", %d writes accepted with no lost update or stale write", r.Damage.Accepted)
		if r.Damage.Refused > 0 {
			s += fmt.Sprintf(", %d refused", r.Damage.Refused)
		}
	}
	return s
}

func describeOverlap(ov Overlap) string {
	return fmt.Sprintf("clients %d and %d both held lock %s between %s and %s (acquire #%d by client %d, acquire #%d by client %d)",
		ov.ClientA, ov.ClientB, ov.Key, secs(ov.From), secs(ov.To), ov.AcquireA.Seq, ov.ClientA, ov.AcquireB.Seq, ov.ClientB)
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return xs[0] + " and " + xs[1]
}

// Visualize checks the history's mutual exclusion and writes porcupine's
// HTML visualization of it to w (Derived.Visualize). A checked history
// has it already: Result.Derived.Visualize runs porcupine no second time.
func Visualize(events []history.Event, o Options, w io.Writer) error {
	if err := history.Validate(events); err != nil {
		return err
	}
	p := parse(events)
	_, hs, info := checkMutex(p, o)
	d := &Derived{p: p, holds: hs, info: info}
	return d.Visualize(w)
}

// annotations turns the history's faults, heals, notes and crashes into
// porcupine annotations: a Fault and the next Heal of the same fault and
// target become one span (an unhealed fault runs to the end of the
// history), a note a point.
func annotations(p *parsed) []porcupine.Annotation {
	var out []porcupine.Annotation
	type faultKey struct{ op, target string }
	open := map[faultKey][]history.Event{}
	var order []faultKey
	span := func(f history.Event, end int64, healed bool) {
		tag := f.Target
		if tag == "" {
			tag = "nemesis"
		}
		desc := f.Op
		if f.Detail != "" {
			desc += " " + f.Detail
		}
		details := fmt.Sprintf("%s from %s", desc, secs(f.Time))
		if healed {
			details += " to " + secs(end)
		} else {
			details += ", never healed"
		}
		out = append(out, porcupine.Annotation{
			Tag: tag, Start: f.Time, End: end, Description: desc, Details: details,
			BackgroundColor: "#f9d6d5",
		})
	}
	for _, e := range p.faults {
		switch e.Type {
		case history.Fault:
			k := faultKey{e.Op, e.Target}
			if _, ok := open[k]; !ok {
				order = append(order, k)
			}
			open[k] = append(open[k], e)
		case history.Heal:
			k := faultKey{e.Op, e.Target}
			if fs := open[k]; len(fs) > 0 {
				span(fs[0], e.Time, true)
				open[k] = fs[1:]
				continue
			}
			tag := e.Target
			if tag == "" {
				tag = "nemesis"
			}
			out = append(out, porcupine.Annotation{Tag: tag, Start: e.Time, Description: "heal " + e.Op, Details: e.Detail})
		case history.Note:
			out = append(out, porcupine.Annotation{Tag: "story", Start: e.Time, Description: e.Note(), Details: e.Op})
		}
	}
	for _, k := range order {
		for _, f := range open[k] {
			span(f, p.last, false)
		}
	}
	for _, e := range p.notes {
		out = append(out, porcupine.Annotation{ClientId: e.Process - 1, Start: e.Time, Description: e.Note(), Details: e.Op})
	}
	procs := make([]int, 0, len(p.crashes))
	for proc := range p.crashes {
		procs = append(procs, proc)
	}
	sort.Ints(procs)
	for _, proc := range procs {
		for _, c := range p.crashes[proc] {
			out = append(out, porcupine.Annotation{
				ClientId: c.Process - 1, Start: c.Time, Description: "crash", Details: c.Detail,
				BackgroundColor: "#f4a3a0",
			})
		}
	}
	return out
}
