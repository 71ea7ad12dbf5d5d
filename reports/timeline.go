// timeline.go derives the Kleppmann-style timeline of a run from its
// history: one lane per lock node, one per client, one for the protected
// storage; the leases as clients believe them and as nodes hold them, the
// faults as spans, every write with its values and fencing token, and the
// checker's evidence highlighted. svg.go draws it.

package reports

import (
	"fmt"
	"sort"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
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
				Status: history.Ok, Client: e.Process, Seq: e.Seq, Label: e.Note()})
			b.renew(e)
		case e.Type == history.Note:
			steps++
			b.t.Steps = append(b.t.Steps, Step{N: steps, At: e.Time, Text: e.Note()})
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

// secs prints a history time as the checker does: t=1.234s.
func secs(t int64) string { return fmt.Sprintf("t=%.3fs", float64(t)/1e9) }

func dur(ns int64) string { return time.Duration(ns).Round(10 * time.Millisecond).String() }
