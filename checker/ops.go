package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/locksim/locksim/history"
)

// op is one client operation: an Invoke event and the next completing event
// of the same process. An operation whose completion never came (the
// process crashed, or invoked again, or the history ended) is pending, which
// is read like Info: its outcome is unknown.
type op struct {
	inv     *history.Event
	done    *history.Event // a zero event when pending
	pending bool
}

// noEvent is the done of a pending operation; it is never written.
var noEvent = &history.Event{}

// status is Ok, Fail or Info (Info for a pending operation).
func (o *op) status() history.Type {
	if o.pending {
		return history.Info
	}
	return o.done.Type
}

func (o *op) key() string {
	if o.inv.Key != "" {
		return o.inv.Key
	}
	return o.done.Key
}

func (o *op) token() string {
	if o.done.Token != "" {
		return o.done.Token
	}
	return o.inv.Token
}

func (o *op) fence() int64 {
	if o.done.Fence != 0 {
		return o.done.Fence
	}
	return o.inv.Fence
}

// returnTime is the completion time, or never for an operation whose
// outcome is unknown (porcupine's convention: it may take effect at any
// time after its call).
func (o *op) returnTime(never int64) int64 {
	if o.status() == history.Info {
		return never
	}
	return o.done.Time
}

// completion is the event that completes the operation, or its invocation
// when it never completed.
func (o *op) completion() *history.Event {
	if o.pending {
		return o.inv
	}
	return o.done
}

func (o *op) read() (int64, bool) {
	if o.done.Read != nil {
		return *o.done.Read, true
	}
	if o.inv.Read != nil && !o.pending {
		return *o.inv.Read, true
	}
	return 0, false
}

func (o *op) wrote() (int64, bool) {
	if o.done.Wrote != nil {
		return *o.done.Wrote, true
	}
	if o.inv.Wrote != nil {
		return *o.inv.Wrote, true
	}
	return 0, false
}

// parsed is a history cut into what the checkers read.
type parsed struct {
	events  []history.Event
	ops     []*op // ordered by invocation
	crashes map[int][]history.Event
	faults  []history.Event // process 0: faults, heals, notes
	notes   []history.Event // notes of client processes
	writes  int
	// horizon is later than every time in the history, lease ends
	// included: the return time of operations whose outcome is unknown.
	horizon int64
	// last is the time of the last event.
	last int64
}

func parse(events []history.Event) *parsed {
	if !slices.IsSortedFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) }) {
		events = append([]history.Event(nil), events...)
		history.Sort(events)
	}
	p := &parsed{events: events, crashes: map[int][]history.Event{}}
	invokes := 0
	for i := range events {
		if events[i].Type == history.Invoke && events[i].Process != 0 && events[i].Op != history.OpCrash {
			invokes++
		}
	}
	// The operations live in one slab: p.ops points into it.
	slab := make([]op, 0, invokes)
	p.ops = make([]*op, 0, invokes)
	open := map[int]*op{}
	var maxT int64
	for i := range events {
		e := &events[i]
		maxT = max(maxT, e.Time, e.LeaseEnd)
		p.last = max(p.last, e.Time)
		if e.Process == 0 {
			p.faults = append(p.faults, *e)
			continue
		}
		if e.Op == history.OpCrash {
			p.crashes[e.Process] = append(p.crashes[e.Process], *e)
			continue
		}
		switch {
		case e.Type == history.Invoke:
			if o := open[e.Process]; o != nil {
				o.pending = true
			}
			slab = append(slab, op{inv: e, done: noEvent})
			o := &slab[len(slab)-1]
			open[e.Process] = o
			p.ops = append(p.ops, o)
			if e.Op == history.OpWrite {
				p.writes++
			}
		case e.Completes():
			if o := open[e.Process]; o != nil {
				o.done = e
				delete(open, e.Process)
			}
		case e.Type == history.Note:
			p.notes = append(p.notes, *e)
		}
	}
	for _, o := range open {
		o.pending = true
	}
	if maxT < math.MaxInt64-1 {
		maxT++
	}
	p.horizon = maxT
	return p
}

// secs formats a time as seconds since the run started.
func secs(t int64) string {
	return fmt.Sprintf("t=%.3fs", float64(t)/1e9)
}
