// timeline.go derives the Kleppmann-style timeline of a run from its
// history: one lane per lock node, one per client, one for the protected
// storage; the leases as clients believe them and as nodes hold them, the
// faults as spans, every write with its values and fencing token, and the
// checker's evidence highlighted. svg.go draws it.

package reports

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// Lane kinds.
const (
	LaneNode    = "node"
	LaneClient  = "client"
	LaneStorage = "storage"
	LaneHarness = "harness"
)

// Lane is one horizontal row of the timeline.
type Lane struct {
	// Kind is node, client, storage or harness.
	Kind string
	// Name is the node's name (A, B, pg), or "client N", "storage", "faults".
	Name string
	// Client is the client number of a client lane.
	Client int
}

// Span kinds.
const (
	SpanBelief  = "belief"  // a client believes it holds the lock
	SpanHold    = "hold"    // a node holds the key for a client (derived)
	SpanPause   = "pause"   // a process stopped
	SpanClock   = "clock"   // a node's wall clock moved
	SpanNetwork = "network" // a partition, delay or reset on a client's links
	SpanDown    = "down"    // a node crashed, until it restarted
	SpanFault   = "fault"   // any other fault
	SpanOverlap = "overlap" // the checker found two holders at once
)

// Span is an interval on one lane.
type Span struct {
	Lane int
	Kind string
	// From and To are history times (ns). Open spans have no known end:
	// To is then the end of the history.
	From, To int64
	Open     bool
	// Client is the holder of a belief or hold span.
	Client int
	Token  string
	Fence  int64
	// Label is drawn with the span; Note is a longer text for a tooltip.
	Label, Note string
	// Evidence marks a span the checker named in its findings.
	Evidence bool

	closed bool  // a hold that something other than time ended
	grant  int64 // the Seq of a belief's grant
}

// Mark kinds.
const (
	MarkWrite = "write"
	MarkStore = "store" // a write as the storage saw it
	MarkCrash = "crash"
	MarkNote  = "note" // a client's own note (a watchdog's renewal)
)

// Mark is one operation on a lane: from its invocation to its completion.
type Mark struct {
	Lane int
	Kind string
	// From is the invocation, At the completion (equal for a point).
	From, At int64
	// Status is ok, fail or info (unknown outcome, pending included).
	Status history.Type
	Client int
	Seq    int64 // the completion's Seq (the invocation's when pending)
	Fence  int64
	Label  string
	// Evidence names the checker's finding this operation is part of.
	Evidence string
}

// Step is one narrated step of the story.
type Step struct {
	N    int
	At   int64
	Text string
}

// Timeline is everything the timeline drawing needs, derived from a
// history and its check.
type Timeline struct {
	Title      string
	Start, End int64
	// Last is the time of the history's last event (End adds a margin).
	Last  int64
	Lanes []Lane
	Spans []Span
	Marks []Mark
	Steps []Step
	// Clipped says the history was too long to draw whole: only the
	// operations up to End are shown.
	Clipped bool
}

// MaxTimelineOps bounds the client operations a timeline draws; a longer
// history (generator mode) is drawn up to that operation.
const MaxTimelineOps = 1500

// LockNodes names the lock-node lanes of a scenario: its Redis nodes
// (A, B, ...), or "pg" for a PostgreSQL lock (a scenario with no Redis
// node).
func LockNodes(sc *scenarios.Scenario) []string {
	if sc == nil {
		return nil
	}
	var out []string
	for i := 0; i < sc.Nodes; i++ {
		out = append(out, scenarios.NodeName(i))
	}
	if len(out) == 0 {
		out = []string{"pg"}
	}
	return out
}

// NewTimeline derives the timeline of a history. nodes names the lock
// nodes (LockNodes) and clients is how many clients take part; nodes and
// clients seen in the history are added. res is the check of events: the
// clients' beliefs are the holds it derived (res.Derived), and its
// evidence is highlighted. With a zero Result, nothing is highlighted and
// the holds are derived from the history (checker.Holds).
func NewTimeline(title string, events []history.Event, res checker.Result, nodes []string, clients int) *Timeline {
	events = append([]history.Event(nil), events...)
	history.Sort(events)
	b := &builder{t: &Timeline{Title: title}, lane: map[string]int{}, evidence: evidenceOf(res)}
	b.lanes(events, nodes, clients)
	b.t.Last = lastTime(events)
	b.t.End = b.t.Last
	ops := 0
	for i, e := range events {
		if e.Type == history.Invoke {
			ops++
			if ops > MaxTimelineOps {
				events = events[:i]
				b.t.Clipped = true
				b.t.End = e.Time
				break
			}
		}
	}
	// A clipped drawing shows the holds as the history up to End has them.
	var holds []checker.Hold
	if res.Derived != nil && !b.t.Clipped {
		holds = res.Derived.Holds()
	} else {
		holds = checker.Holds(events)
	}
	b.beliefs = map[int64][]checker.Hold{}
	for _, h := range holds {
		b.beliefs[h.Grant.Seq] = append(b.beliefs[h.Grant.Seq], h)
	}
	b.walk(events)
	b.leaks(res)
	b.overlaps(res)
	if b.t.End <= b.t.Start {
		b.t.End = b.t.Start + int64(time.Second)
	}
	b.t.Start = startTime(events, b.t.End)
	b.t.End += (b.t.End - b.t.Start) / 25 // room for the last labels
	for i := range b.t.Spans {
		if s := &b.t.Spans[i]; s.Open {
			s.To = b.t.End
		}
	}
	return b.t
}

// startTime starts the drawing a little before the first event of the
// story, on a round time: the servers' start-up before it is empty.
func startTime(events []history.Event, end int64) int64 {
	if len(events) == 0 {
		return 0
	}
	first := events[0].Time
	margin := max((end-first)/20, int64(10*time.Millisecond))
	step := tickStep(end - first + margin)
	start := first - margin
	start -= start % step
	return max(start, 0)
}

func lastTime(events []history.Event) int64 {
	var last int64
	for _, e := range events {
		last = max(last, e.Time) // lease ends past it are drawn clipped
	}
	return last
}

// builder walks a history once, drawing each client's beliefs (the
// checker's holds) as their grants come, and keeping each node's hold open
// until something ends it.
type builder struct {
	t        *Timeline
	lane     map[string]int // "client 1", "node A", "storage", "harness"
	evidence map[int64]string
	beliefs  map[int64][]checker.Hold // the Seq of a grant -> the holds it began
	hold     map[string]int           // node -> index of its current hold span
	faults   map[string][]int
}

func (b *builder) addLane(l Lane) int {
	key := l.Kind + " " + l.Name
	if i, ok := b.lane[key]; ok {
		return i
	}
	b.t.Lanes = append(b.t.Lanes, l)
	b.lane[key] = len(b.t.Lanes) - 1
	return len(b.t.Lanes) - 1
}

func (b *builder) laneOf(kind, name string) (int, bool) {
	i, ok := b.lane[kind+" "+name]
	return i, ok
}

// lanes lays out nodes first (as in the article's diagrams, the lock
// service on top), then clients, then storage when anything was written.
func (b *builder) lanes(events []history.Event, nodes []string, nclients int) {
	seen := map[string]bool{}
	var all []string
	for _, n := range nodes {
		if !seen[n] {
			seen[n] = true
			all = append(all, n)
		}
	}
	var extra []string
	clients := map[int]bool{}
	for c := 1; c <= nclients; c++ {
		clients[c] = true
	}
	writes := false
	for _, e := range events {
		for _, n := range e.Nodes {
			if !seen[n] {
				seen[n] = true
				extra = append(extra, n)
			}
		}
		if e.Process > 0 {
			clients[e.Process] = true
		}
		if e.Op == history.OpWrite {
			writes = true
		}
	}
	sort.Strings(extra)
	all = append(all, extra...)
	if len(all) == 0 {
		all = []string{"lock"}
	}
	for _, n := range all {
		b.addLane(Lane{Kind: LaneNode, Name: n})
	}
	ids := make([]int, 0, len(clients))
	for c := range clients {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	for _, c := range ids {
		b.addLane(Lane{Kind: LaneClient, Name: fmt.Sprintf("client %d", c), Client: c})
	}
	if writes {
		b.addLane(Lane{Kind: LaneStorage, Name: "storage"})
	}
}

func (b *builder) nodeNames() []string {
	var out []string
	for _, l := range b.t.Lanes {
		if l.Kind == LaneNode {
			out = append(out, l.Name)
		}
	}
	return out
}

func (b *builder) walk(events []history.Event) {
	b.hold = map[string]int{}
	b.faults = map[string][]int{}
	pending := map[int]history.Event{}
	steps := 0
	for _, e := range events {
		switch {
		case e.Type == history.Note && e.Process > 0:
			b.t.Marks = append(b.t.Marks, Mark{Lane: b.clientLane(e.Process), Kind: MarkNote, From: e.Time, At: e.Time,
				Status: history.Ok, Client: e.Process, Seq: e.Seq, Label: noteText(e)})
			b.renew(e)
		case e.Type == history.Note:
			steps++
			b.t.Steps = append(b.t.Steps, Step{N: steps, At: e.Time, Text: noteText(e)})
		case e.Process == 0 && e.Type == history.Fault:
			b.fault(e)
		case e.Process == 0 && e.Type == history.Heal:
			b.heal(e)
		case e.Op == history.OpCrash:
			if inv, ok := pending[e.Process]; ok {
				b.pendingMark(inv)
				delete(pending, e.Process)
			}
			b.t.Marks = append(b.t.Marks, Mark{Lane: b.clientLane(e.Process), Kind: MarkCrash, From: e.Time, At: e.Time,
				Status: history.Ok, Client: e.Process, Seq: e.Seq, Label: "crash"})
		case e.Type == history.Invoke:
			if inv, ok := pending[e.Process]; ok {
				b.pendingMark(inv)
			}
			pending[e.Process] = e
		case e.Completes():
			inv, ok := pending[e.Process]
			if !ok {
				inv = e
			}
			delete(pending, e.Process)
			b.complete(inv, e)
		}
	}
	for _, inv := range pending {
		b.pendingMark(inv)
	}
}

func (b *builder) clientLane(c int) int {
	return b.addLane(Lane{Kind: LaneClient, Name: fmt.Sprintf("client %d", c), Client: c})
}

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

// leaks keeps open, to the end, the holds the liveness check found leaked.
func (b *builder) leaks(res checker.Result) {
	for _, l := range res.Liveness.Leaks {
		for i := range b.t.Spans {
			s := &b.t.Spans[i]
			if s.Kind == SpanHold && s.Client == l.Holder && s.Token != "" && s.Token == l.Acquire.Token {
				s.Open, s.Evidence = true, true
				s.Label = fmt.Sprintf("%d: leaked, still held", s.Client)
				s.Note += "; the checker found it still held after the holder " + l.Gone
			}
		}
	}
}

// overlaps adds the checker's overlapping holds as bands.
func (b *builder) overlaps(res checker.Result) {
	for _, ov := range res.Mutex.Overlaps {
		to := ov.To
		if to <= ov.From {
			to = b.t.End
		}
		b.t.Spans = append(b.t.Spans, Span{Lane: -1, Kind: SpanOverlap, From: ov.From, To: to, Evidence: true,
			Label: fmt.Sprintf("clients %d and %d both hold %s", ov.ClientA, ov.ClientB, ov.Key),
			Note:  ov.Sentence()})
		for i := range b.t.Spans {
			s := &b.t.Spans[i]
			if s.Kind == SpanBelief && (s.grant == ov.AcquireA.Seq || s.grant == ov.AcquireB.Seq) {
				s.Evidence = true // one of the two holds
			}
		}
	}
}

// evidenceOf maps the Seq of every event the checker cites to its finding.
func evidenceOf(res checker.Result) map[int64]string {
	m := map[int64]string{}
	for _, l := range res.Damage.LostUpdates {
		m[l.WriteA.Seq] = "lost update"
		m[l.WriteB.Seq] = "lost update"
	}
	for _, s := range res.Damage.StaleWrites {
		m[s.Write.Seq] = "stale write"
	}
	for _, f := range res.Fencing.Backwards {
		m[f.Event.Seq] = "token went backwards"
	}
	for _, l := range res.Liveness.Leaks {
		m[l.FailedAcquire.Seq] = "refused: lock leaked"
	}
	return m
}

func noteText(e history.Event) string {
	if e.Detail != "" {
		return e.Detail
	}
	return e.Op
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

// secs prints a history time as the checker does: t=1.234s.
func secs(t int64) string { return fmt.Sprintf("t=%.3fs", float64(t)/1e9) }

func dur(ns int64) string { return time.Duration(ns).Round(10 * time.Millisecond).String() }
