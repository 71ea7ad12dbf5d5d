// timeline_ops.go draws a history's operations on the timeline: the
// leases as clients believe them and as nodes hold them, grants,
// extensions and renewals, every write with its values and fencing
// token, and the labels that say them.

package reports

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// pendingMark draws an operation whose completion never came.
func (b *builder) pendingMark(inv history.Event) {
	b.t.Marks = append(b.t.Marks, Mark{Lane: b.clientLane(inv.Process), Kind: inv.Op, From: inv.Time, At: inv.Time,
		Status: history.Info, Client: inv.Process, Seq: inv.Seq, Label: inv.Op + " ?"})
}

// believe draws the beliefs that the grant e began: the checker's holds,
// from the grant until their lease end, or what ended them first. A grant
// whose lease had ended before it came (the checker counts no hold) is
// drawn as the sliver it is.
func (b *builder) believe(inv, e history.Event) {
	if len(b.beliefs[e.Seq]) == 0 && e.Op == history.OpAcquire && e.LeaseEnd > 0 && e.LeaseEnd <= e.Time {
		key := keyOf(inv, e)
		s := Span{Lane: b.clientLane(e.Process), Kind: SpanBelief, From: e.Time, To: e.LeaseEnd, Client: e.Process,
			Token: e.Token, Fence: fenceOf(inv, e), Label: "holds " + key, grant: e.Seq,
			Note: fmt.Sprintf("client %d believes it holds %s from %s (lease until %s)", e.Process, key, secs(e.Time), secs(e.LeaseEnd))}
		if s.Fence != 0 {
			s.Label += fmt.Sprintf(" · fence %d", s.Fence)
		}
		b.t.Spans = append(b.t.Spans, s)
		return
	}
	for _, h := range b.beliefs[e.Seq] {
		key := h.Key
		if key == "" {
			key = "the lock"
		}
		s := Span{Lane: b.clientLane(h.Client), Kind: SpanBelief, From: h.From, To: h.To, Open: h.Open,
			Client: h.Client, Token: h.Grant.Token, Fence: h.Fence, Label: "holds " + key, grant: h.Grant.Seq}
		if h.Fence != 0 {
			s.Label += fmt.Sprintf(" · fence %d", h.Fence)
		}
		if h.Grant.LeaseEnd > 0 {
			s.Note = fmt.Sprintf("client %d believes it holds %s from %s (lease until %s)", h.Client, key, secs(h.From), secs(h.Grant.LeaseEnd))
		} else {
			s.Note = fmt.Sprintf("client %d believes it holds %s from %s (no expiry)", h.Client, key, secs(h.From))
		}
		if why := beliefEnds[h.End]; why != "" {
			s.Note += ", until it " + why + " at " + secs(h.To)
		}
		b.t.Spans = append(b.t.Spans, s)
	}
}

// beliefEnds words how a hold ended before its lease did.
var beliefEnds = map[string]string{
	checker.HoldReleased:   "released",
	checker.HoldCrashed:    "crashed",
	checker.HoldReacquired: "acquired again",
	checker.HoldLost:       "learned it had lost the lease",
}

// endHold ends the hold on a node at a time, if it runs past it.
func (b *builder) endHold(node string, at int64, why string) {
	i, ok := b.hold[node]
	if !ok {
		return
	}
	s := &b.t.Spans[i]
	if s.Open || s.To > at {
		s.To, s.Open, s.closed = at, false, true
		s.Note += "; " + why + " at " + secs(at)
	}
	delete(b.hold, node)
}

func (b *builder) complete(inv, e history.Event) {
	lane := b.clientLane(e.Process)
	m := Mark{Lane: lane, Kind: inv.Op, From: inv.Time, At: e.Time, Status: e.Type, Client: e.Process,
		Seq: e.Seq, Fence: fenceOf(inv, e), Evidence: b.evidence[e.Seq]}
	switch inv.Op {
	case history.OpAcquire:
		m.Label = "acquire " + statusWord(e.Type)
		if e.Type == history.Ok {
			b.grant(inv, e)
			if len(e.Nodes) > 0 {
				m.Label += " " + strings.Join(e.Nodes, ",")
			}
		}
	case history.OpExtend:
		m.Label = "extend " + statusWord(e.Type)
		if e.Type == history.Ok {
			b.believe(inv, e) // an extend that resumed a lapsed lease
			b.extend(inv, e)
		}
	case history.OpRelease:
		m.Label = "release " + statusWord(e.Type)
		if e.Type == history.Ok {
			tok := e.Token
			if tok == "" {
				tok = inv.Token
			}
			for _, n := range b.nodeNames() {
				if i, ok := b.hold[n]; ok && b.t.Spans[i].Client == e.Process && checker.TokensMatch(b.t.Spans[i].Token, tok) {
					b.endHold(n, e.Time, "released")
				}
			}
		}
	case history.OpWrite:
		m.Label = writeLabel(inv, e)
		if i, ok := b.laneOf(LaneStorage, "storage"); ok && e.Type != history.Info {
			sm := m
			sm.Lane, sm.Kind, sm.From = i, MarkStore, e.Time
			sm.Label = storeLabel(e, m.Fence)
			b.t.Marks = append(b.t.Marks, sm)
		}
	default:
		m.Label = inv.Op + " " + statusWord(e.Type)
	}
	b.t.Marks = append(b.t.Marks, m)
}

// grant draws the client's belief (believe) and, on every node that
// granted, a hold. The nodes' holds are derived, not observed: a node is
// taken to hold the key from the grant until that lease's release, its TTL
// (counted from the acquire's invocation), a grant to another lease on
// that node, a clock jump that outruns the TTL, or a crash of the node.
func (b *builder) grant(inv, e history.Event) {
	b.believe(inv, e)
	tok := e.Token
	fence := fenceOf(inv, e)

	nodes := e.Nodes
	if len(nodes) == 0 {
		nodes = b.nodeNames()
	}
	for _, n := range nodes {
		lane, ok := b.laneOf(LaneNode, n)
		if !ok {
			continue
		}
		if i, ok := b.hold[n]; ok && b.t.Spans[i].Token != tok {
			b.endHold(n, e.Time, fmt.Sprintf("granted to client %d", e.Process))
		}
		h := Span{Lane: lane, Kind: SpanHold, From: e.Time, Client: e.Process, Token: tok, Fence: fence,
			Label: strconv.Itoa(e.Process)}
		if e.LeaseEnd > 0 && inv.TTL > 0 {
			h.To = inv.Time + inv.TTL
			h.Note = fmt.Sprintf("%s holds %s for client %d from %s, TTL until %s (derived)", n, keyOf(inv, e), e.Process, secs(e.Time), secs(h.To))
		} else {
			h.Open = true
			h.Note = fmt.Sprintf("%s holds %s for client %d from %s (derived)", n, keyOf(inv, e), e.Process, secs(e.Time))
		}
		b.t.Spans = append(b.t.Spans, h)
		b.hold[n] = len(b.t.Spans) - 1
	}
}

// extend moves the TTL of the lease's current holds on the nodes (the
// checker moved the belief's end).
func (b *builder) extend(inv, e history.Event) {
	tok := e.Token
	if tok == "" {
		tok = inv.Token
	}
	if inv.TTL <= 0 {
		return
	}
	for _, i := range b.hold {
		s := &b.t.Spans[i]
		if s.Client == e.Process && checker.TokensMatch(s.Token, tok) && !s.Open && s.To >= inv.Time {
			s.To = max(s.To, inv.Time+inv.TTL)
		}
	}
}

// renew applies a watchdog's renew note (its TTL set when it succeeded,
// with the nodes that renewed): whatever key those nodes hold now lives on
// for the TTL. With plain PEXPIRE that may be another client's key, which
// is the point of redis-naive-watchdog.
func (b *builder) renew(e history.Event) {
	if e.TTL <= 0 || e.Reason != "" {
		return
	}
	ttl := time.Duration(e.TTL)
	for _, n := range e.Nodes {
		if i, ok := b.hold[n]; ok {
			if s := &b.t.Spans[i]; !s.Open && s.To >= e.Time {
				s.To = max(s.To, e.Time+int64(ttl))
			}
		}
	}
}

func fenceOf(inv, e history.Event) int64 {
	if e.Fence != 0 {
		return e.Fence
	}
	return inv.Fence
}

func keyOf(inv, e history.Event) string {
	if inv.Key != "" {
		return inv.Key
	}
	if e.Key != "" {
		return e.Key
	}
	return "the lock"
}

func statusWord(t history.Type) string {
	switch t {
	case history.Ok:
		return "✓"
	case history.Fail:
		return "✗"
	}
	return "?"
}

func writeLabel(inv, e history.Event) string {
	var s string
	switch {
	case e.Read != nil && e.Wrote != nil:
		s = fmt.Sprintf("read %d → write %d", *e.Read, *e.Wrote)
	case e.Read != nil:
		s = fmt.Sprintf("read %d", *e.Read)
	default:
		s = "write"
	}
	if f := fenceOf(inv, e); f != 0 {
		s += fmt.Sprintf(" · fence %d", f)
	}
	switch e.Type {
	case history.Fail:
		s += " ✗ refused"
	case history.Info:
		s += " ?"
	}
	return s
}

func storeLabel(e history.Event, fence int64) string {
	if e.Type == history.Fail {
		if fence != 0 {
			return fmt.Sprintf("refused fence %d", fence)
		}
		return "refused"
	}
	if e.Wrote != nil {
		return fmt.Sprintf("stored %d", *e.Wrote)
	}
	return "ok"
}
