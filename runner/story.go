package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// claim is a step's statement of what must have happened to its
// operation, waiting for the operation to complete.
type claim struct {
	index int // the step's index in the story
	st    scenarios.Step
	// from is the record's time just before the command was sent: the
	// operation is the client's first of its kind invoked after it.
	from int64
}

// StoryError is a run that contradicted its own story: a harness
// failure, never a verdict.
type StoryError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Step    int    `json:"step"`
	Claimed string `json:"claimed"`
	Saw     string `json:"saw"`
}

func (e *StoryError) Error() string {
	return fmt.Sprintf("%s:%d: step %d: the story says %s, but the run shows %s", e.File, e.Line, e.Step, e.Claimed, e.Saw)
}

// hasClaims says whether a story states what must happen at any step.
func hasClaims(sc *scenarios.Scenario) bool {
	for _, st := range sc.Steps {
		if expectsSomething(st) {
			return true
		}
	}
	return false
}

// expectsSomething says whether a step states an outcome.
func expectsSomething(st scenarios.Step) bool { return st.Expect != "" }

// outcome is what a step claims, or what an event shows, in the words of
// a story: granted/accepted/ok, refused or unknown, and the facts that go
// with it.
type outcome struct {
	word, reason string
	nodes        []string
	fence        int64
	read         *int64
}

func (o outcome) String() string {
	s := o.word
	if o.reason != "" {
		s += " (" + o.reason + ")"
	}
	switch {
	case len(o.nodes) > 0 && o.word == scenarios.Granted:
		s += " by " + strings.Join(o.nodes, ",")
	case len(o.nodes) > 0:
		s += ", granted by " + strings.Join(o.nodes, ",")
	}
	if o.fence != 0 {
		s += fmt.Sprintf(" with fencing token %d", o.fence)
	}
	if o.read != nil {
		s += fmt.Sprintf(" having read %d", *o.read)
	}
	return s
}

// claimOf is what a step claims.
func claimOf(st scenarios.Step) outcome {
	return outcome{word: st.Expect, reason: st.Reason, nodes: st.GrantedBy, fence: st.Fence, read: st.Read}
}

// outcomeOf is what a completion (or a renew note) shows.
func outcomeOf(e history.Event) outcome {
	o := outcome{word: scenarios.Ended(e.Op, e.Type), reason: e.Reason, nodes: e.Nodes, fence: e.Fence, read: e.Read}
	switch {
	case e.Op == history.OpRenew && e.Reason == "": // a renew note: renewed
		o.word = scenarios.OK
	case e.Op == history.OpRenew:
		o.word = scenarios.Refused
	}
	return o
}

// Claim says what a step claims its operation ends in, in the words a
// contradiction is reported in ("refused (validity), granted by A,B,C").
func Claim(st scenarios.Step) string { return claimOf(st).String() }

// claimed says a step's statement in words.
func claimed(st scenarios.Step) string {
	return fmt.Sprintf("client %d's %s ends %s", st.Client, st.Do, Claim(st))
}

// saw says how an event ended, in the words of a claim.
func saw(e history.Event) string {
	s := outcomeOf(e).String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return fmt.Sprintf("%s at t=%.3fs", s, float64(e.Time)/1e9)
}

// matches says whether a completion (or renew note) is what st claims:
// each fact the step states holds.
func matches(st scenarios.Step, e history.Event) bool {
	want, got := claimOf(st), outcomeOf(e)
	return want.word == got.word &&
		(want.reason == "" || want.reason == got.reason) &&
		(want.fence == 0 || want.fence == got.fence) &&
		(want.read == nil || (got.read != nil && *want.read == *got.read)) &&
		(len(want.nodes) == 0 || slices.Equal(want.nodes, got.nodes))
}

// completion finds the completion of client's first op invoked at or
// after from; events are in recording order. ok is false while it has not
// come.
func completion(events []history.Event, client int, op string, from int64) (history.Event, bool) {
	invoked := false
	for _, e := range events {
		if e.Process != client || e.Op != op {
			continue
		}
		switch {
		case !invoked && e.Type == history.Invoke && e.Time >= from:
			invoked = true
		case invoked && e.Completes():
			return e, true
		}
	}
	return history.Event{}, false
}

// settle checks every claim whose operation has completed; with final,
// one that never completed is a contradiction too.
func (r *run) settle(final bool) error {
	if len(r.claims) == 0 {
		return nil
	}
	events := r.rec.Events()
	slices.SortStableFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	var open []claim
	for _, c := range r.claims {
		e, done := completion(events, c.st.Client, c.st.Do, c.from)
		if !done {
			if final {
				if err := r.contradiction(c, "no completion of that "+c.st.Do); err != nil {
					return err
				}
				continue
			}
			open = append(open, c)
			continue
		}
		if !matches(c.st, e) {
			if err := r.contradiction(c, saw(e)); err != nil {
				return err
			}
		}
	}
	r.claims = open
	return nil
}

// contradiction is claim c's step not happening as told (what shows
// instead): the run's end, a harness failure; with Options.Departures
// the first one is recorded and the story goes on (nil).
func (r *run) contradiction(c claim, what string) error {
	se := &StoryError{File: r.sc.File, Line: c.st.Line, Step: c.index + 1, Claimed: claimed(c.st), Saw: what}
	if !r.o.Departures {
		return &HarnessError{Err: se}
	}
	if r.departed == nil {
		r.departed = se
		r.say("the lock departs from the story at step %d: the story says %s, but the run shows %s; the story goes on", se.Step, se.Claimed, se.Saw)
	}
	return nil
}

// checkRenewal checks a renewal step against the client's latest renew
// note so far.
func (r *run) checkRenewal(index int, st scenarios.Step) error {
	if r.sc.IsCounterfactual {
		return nil
	}
	events := r.rec.Events()
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Process == st.Client && e.Type == history.Note && e.Op == history.OpRenew {
			if !matches(st, e) {
				return r.contradiction(claim{index: index, st: st}, saw(e))
			}
			r.say("  client %d's watchdog: last renewal %s", st.Client, saw(e))
			return nil
		}
	}
	return r.contradiction(claim{index: index, st: st}, "no renewal at all")
}
