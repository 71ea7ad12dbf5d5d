// state.go answers the workshop's questions about a history so far:
// who holds the lock and what each client believes (StateAt), the next
// lease to expire (NextExpiry), and how long a step waits for it
// (StepWait).

package reports

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// StateAt says, from a history so far, who holds the lock on each node
// and what each client believes at time at (workshop mode), as lines of
// text.
func StateAt(events []history.Event, nodes []string, clients int, at int64) []string {
	t := NewTimeline("", until(events, at), checker.Result{}, nodes, clients)
	active := func(s Span) bool { return s.From <= at && (s.Open || s.To > at) }
	lines := []string{"who holds the key (derived from the history):"}
	for li, l := range t.Lanes {
		if l.Kind != LaneNode {
			continue
		}
		who := "free"
		for _, s := range t.Spans {
			if s.Lane == li && s.Kind == SpanHold && active(s) {
				who = fmt.Sprintf("client %d", s.Client)
				if !s.Open {
					who += fmt.Sprintf(" (TTL ends in %s)", dur(s.To-at))
				}
			}
		}
		for _, s := range t.Spans {
			if s.Lane == li && s.Kind != SpanHold && active(s) {
				who += "; " + s.Label
			}
		}
		name, _, _ := laneTitle(l)
		lines = append(lines, fmt.Sprintf("  %-10s %s", name, who))
	}
	lines = append(lines, "what each client believes:")
	for li, l := range t.Lanes {
		if l.Kind != LaneClient {
			continue
		}
		what := "holds nothing"
		for _, s := range t.Spans {
			if s.Lane == li && s.Kind == SpanBelief && active(s) {
				what = "holds the lock"
				if s.Fence != 0 {
					what += fmt.Sprintf(" with fence %d", s.Fence)
				}
				if !s.Open {
					what += fmt.Sprintf(", for %s more", dur(s.To-at))
				}
			}
		}
		for _, s := range t.Spans {
			if s.Lane == li && s.Kind != SpanBelief && active(s) {
				what += "; " + s.Label
			}
		}
		name, _, _ := laneTitle(l)
		lines = append(lines, fmt.Sprintf("  %-10s %s", name, what))
	}
	return lines
}

// NextExpiry is the earliest end, after at, of a lease a client believes
// it holds or a hold a node keeps by TTL; 0 when none runs out by time.
func NextExpiry(events []history.Event, nodes []string, at int64) (when int64, what string) {
	t := NewTimeline("", until(events, at), checker.Result{}, nodes, 0)
	for _, s := range t.Spans {
		if (s.Kind != SpanBelief && s.Kind != SpanHold) || s.Open || s.From > at || s.To <= at {
			continue
		}
		if when == 0 || s.To < when {
			when = s.To
			if s.Kind == SpanBelief {
				what = fmt.Sprintf("client %d's lease", s.Client)
			} else {
				what = fmt.Sprintf("client %d's key on %s", s.Client, t.Lanes[s.Lane].Name)
			}
		}
	}
	return when, what
}

// StepMargin is how long before the first lease or TTL runs out a step
// that waits for the presenter (sim run --step, sim workshop's Step) goes
// on by itself: the servers' clocks do not stop while the audience reads,
// and a lease that expires during the pause would tell another story
// than the scenario's.
const StepMargin = 500 * time.Millisecond

// StepWait is how long a step that waits for the presenter at time at may
// wait before it goes on by itself (StepMargin before NextExpiry), and
// what would run out; ok is false when nothing runs out by time and the
// step may wait for ever.
func StepWait(events []history.Event, nodes []string, at int64) (left time.Duration, what string, ok bool) {
	when, what := NextExpiry(events, nodes, at)
	if when == 0 {
		return 0, "", false
	}
	return max(time.Duration(when-at)-StepMargin, 0), what, true
}

// until keeps the events recorded by time at: the history so far.
func until(events []history.Event, at int64) []history.Event {
	var out []history.Event
	for _, e := range events {
		if e.Time <= at {
			out = append(out, e)
		}
	}
	return out
}
