// timeline_faults.go draws a history's faults and heals on the timeline:
// each fault a span on the lane of what it strikes (a node, a client, or
// a lane of its own), closed by its heal or by its own end; a crash or a
// clock jump ends the node's hold.

package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
)

func (b *builder) fault(e history.Event) {
	lane, kind, label := b.faultLane(e)
	s := Span{Lane: lane, Kind: kind, From: e.Time, Open: true, Label: label,
		Note: fmt.Sprintf("%s on %s (%s) from %s", e.Op, e.Target, e.Detail, secs(e.Time))}
	// A fault with a size in time ends by itself (a timed pause, a delayed
	// restart) even though its Heal is recorded only at the end of the run.
	if d, ok := selfHealing(e); ok {
		s.To, s.Open = e.Time+int64(d), false
	}
	b.t.Spans = append(b.t.Spans, s)
	key := e.Op + "\x00" + e.Target
	b.faults[key] = append(b.faults[key], len(b.t.Spans)-1)

	if b.t.Lanes[lane].Kind == LaneNode {
		node := b.t.Lanes[lane].Name
		switch kind {
		case SpanClock:
			if d := time.Duration(faultOf(e).Size); d != 0 {
				if i, ok := b.hold[node]; ok {
					h := &b.t.Spans[i]
					switch {
					case d > 0 && !h.Open && h.To-e.Time <= int64(d):
						b.endHold(node, e.Time, "expired by the clock jump")
					case d < 0 && !h.Open:
						h.To -= int64(d)
					}
				}
			}
		case SpanDown:
			b.endHold(node, e.Time, "lost in the crash")
		}
	}
}

func (b *builder) heal(e history.Event) {
	key := e.Op + "\x00" + e.Target
	open := b.faults[key]
	if len(open) == 0 {
		return
	}
	s := &b.t.Spans[open[0]]
	b.faults[key] = open[1:]
	if s.Open || s.To > e.Time {
		s.To, s.Open = e.Time, false
	}
	s.Note += " to " + secs(e.Time)
}

// faultOf is a fault event's structured fields (none in a history
// recorded before they existed: the fault then gets a lane of its own).
func faultOf(e history.Event) history.FaultFields {
	if e.Fault == nil {
		return history.FaultFields{}
	}
	return *e.Fault
}

// faultLane places a fault by what it hits (its structured fields): a
// node's lane, a client's lane, or a lane of its own.
func (b *builder) faultLane(e history.Event) (lane int, kind, label string) {
	f := faultOf(e)
	kind = SpanFault
	switch f.Effect {
	case history.EffectPause:
		kind = SpanPause
	case history.EffectClock:
		kind = SpanClock
	case history.EffectNetwork:
		kind = SpanNetwork
	case history.EffectDown:
		kind = SpanDown
	}
	label = e.Op
	if e.Detail != "" {
		label += " " + e.Detail
	}
	switch {
	case f.Effect == history.EffectPause:
		label = "paused"
		if d, ok := selfHealing(e); ok {
			label += " " + d.String()
		}
	case f.Effect == history.EffectClock && f.Size != 0:
		label = "clock " + time.Duration(f.Size).String()
		if f.Size > 0 {
			label = "clock +" + time.Duration(f.Size).String()
		}
	case f.Effect == history.EffectDown:
		label = "down (" + e.Op + ")"
	case silences(e.Op) && len(f.Links) > 0:
		// A partition, or a replication lag (a partition of a node's
		// replication link).
		label = "cut off from " + strings.Join(f.Links, ",")
	case len(f.Links) > 0:
		label += " to " + strings.Join(f.Links, ",")
	}
	if f.Node != "" {
		if i, ok := b.laneOf(LaneNode, f.Node); ok {
			return i, kind, label
		}
	}
	if f.Client > 0 {
		return b.clientLane(f.Client), kind, label
	}
	if e.Target != "" {
		label += " on " + e.Target
	}
	return b.addLane(Lane{Kind: LaneHarness, Name: "faults"}), kind, label
}

// silences says whether fault kind op leaves the links it strikes
// answering nothing (the registry's Shape.Silences).
func silences(op string) bool {
	k, ok := nemesis.LookupKind(op)
	return ok && k.Shape.Silences
}

// selfHealing returns how long a fault lasts by itself, when it does: a
// timed pause, a crash's restart delay (a restart at once lasts no time).
func selfHealing(e history.Event) (time.Duration, bool) {
	f := faultOf(e)
	switch {
	case f.Lasts == 1:
		return 0, true
	case f.Lasts > 0:
		return time.Duration(f.Lasts), true
	}
	return 0, false
}
