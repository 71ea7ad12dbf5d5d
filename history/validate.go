package history

import (
	"fmt"
	"sort"
)

// Rules a recording must keep; an InvalidError names the one broken.
const (
	// RuleUniqueSeq: no two events share a Seq.
	RuleUniqueSeq = "unique-seq"
	// RuleKnownType: Type is one of the Type constants.
	RuleKnownType = "known-type"
	// RuleTime: Time is not negative.
	RuleTime = "non-negative-time"
	// RuleProcess: Process is not negative, and operations (invocations
	// and completions) belong to client processes (Process > 0).
	RuleProcess = "client-process"
	// RuleInvokeFirst: a completion follows an open invocation of its
	// process.
	RuleInvokeFirst = "invoke-before-completion"
	// RuleSameOp: a completion has its invocation's Op.
	RuleSameOp = "completion-matches-invoke"
	// RuleProcessTime: one process's invocations and completions do not go
	// back in time, in recording order (notes and crashes exempt).
	RuleProcessTime = "process-time-monotonic"
)

// InvalidError is a history that breaks one of the recording's rules.
type InvalidError struct {
	Line int   // 1-based line of history.jsonl, 0 when unknown
	Seq  int64 // the offending event
	Rule string
	Msg  string
}

func (e *InvalidError) Error() string {
	where := fmt.Sprintf("seq %d", e.Seq)
	if e.Line > 0 {
		where = fmt.Sprintf("line %d", e.Line)
	}
	return fmt.Sprintf("%s: %s (rule: %s)", where, e.Msg, e.Rule)
}

// Validate checks the recording's own rules on events, taken in recording
// (Seq) order. An invocation while another of the same process is open is
// allowed: the earlier one stays pending.
func Validate(events []Event) error {
	return validate(events, nil)
}

// validate is Validate with the file line of each event (lines may be nil).
func validate(events []Event, lines []int) error {
	idx := make([]int, len(events))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return events[idx[a]].Seq < events[idx[b]].Seq })
	open := map[int]string{} // process -> Op of its open invocation
	last := map[int]int64{}  // process -> time of its last operation event
	for n, i := range idx {
		e := events[i]
		bad := func(rule, format string, args ...any) error {
			err := &InvalidError{Seq: e.Seq, Rule: rule, Msg: fmt.Sprintf(format, args...)}
			if lines != nil {
				err.Line = lines[i]
			}
			return err
		}
		// what names the event in an error; built only for one.
		what := func() string { return fmt.Sprintf("%s %s of process %d", e.Type, e.Op, e.Process) }
		if n > 0 && events[idx[n-1]].Seq == e.Seq {
			return bad(RuleUniqueSeq, "seq %d appears twice", e.Seq)
		}
		switch e.Type {
		case Invoke, Ok, Fail, Info, Fault, Heal, Note:
		default:
			return bad(RuleKnownType, "unknown event type %q", e.Type)
		}
		if e.Time < 0 {
			return bad(RuleTime, "%s at negative time %d", what(), e.Time)
		}
		if e.Process < 0 {
			return bad(RuleProcess, "negative process %d", e.Process)
		}
		op := e.Type == Invoke || e.Completes()
		if !op || e.Op == OpCrash {
			continue
		}
		if e.Process == 0 {
			return bad(RuleProcess, "%s: operations belong to client processes (1, 2, ...)", what())
		}
		if t, ok := last[e.Process]; ok && e.Time < t {
			return bad(RuleProcessTime, "%s at %d, before the process's previous event at %d", what(), e.Time, t)
		}
		last[e.Process] = e.Time
		if e.Type == Invoke {
			open[e.Process] = e.Op
			continue
		}
		inv, ok := open[e.Process]
		if !ok {
			return bad(RuleInvokeFirst, "completion without an invocation: %s", what())
		}
		if inv != e.Op {
			return bad(RuleSameOp, "%s completes an invocation of %s", what(), inv)
		}
		delete(open, e.Process)
	}
	return nil
}
