package reports

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// load reads a recorded history from testdata/ and checks it.
func load(t *testing.T, name string) ([]history.Event, checker.Result) {
	t.Helper()
	events, err := history.Load("testdata/" + name + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return events, check(t, events)
}

// check checks a history that must be valid.
func check(t *testing.T, events []history.Event) checker.Result {
	t.Helper()
	r, err := checker.Check(events, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wellFormed fails the test unless s parses as XML.
func wellFormed(t *testing.T, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

func laneIndex(t *testing.T, tl *Timeline, kind, name string) int {
	t.Helper()
	for i, l := range tl.Lanes {
		if l.Kind == kind && l.Name == name {
			return i
		}
	}
	t.Fatalf("no %s lane %q in %+v", kind, name, tl.Lanes)
	return -1
}

func spansOn(tl *Timeline, lane int, kind string) []Span {
	var out []Span
	for _, s := range tl.Spans {
		if s.Lane == lane && s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

const ms = int64(1e6)

// TestTimelineFencedPause is Kleppmann's fencing diagram, hand-written:
// client 1 pauses with token 33, its lease runs out, client 2 writes with
// 34, client 1's late write with 33 is refused.
func TestTimelineFencedPause(t *testing.T) {
	events, res := load(t, "fenced-pause")
	tl := NewTimeline("fenced pause", events, res, []string{"A"}, 2)

	var kinds []string
	for _, l := range tl.Lanes {
		kinds = append(kinds, l.Kind+":"+l.Name)
	}
	if got, want := strings.Join(kinds, " "), "node:A client:client 1 client:client 2 storage:storage"; got != want {
		t.Fatalf("lanes %q, want %q", got, want)
	}
	c1 := laneIndex(t, tl, LaneClient, "client 1")
	a := laneIndex(t, tl, LaneNode, "A")

	tests := []struct {
		name     string
		lane     int
		kind     string
		from, to int64
		client   int
	}{
		{"client 1 believes until its lease end", c1, SpanBelief, 110 * ms, 1100 * ms, 1},
		{"A holds for client 1 until the TTL from the invocation", a, SpanHold, 110 * ms, 1100 * ms, 1},
		{"A holds for client 2 until the release completes", a, SpanHold, 1310 * ms, 1410 * ms, 2},
		{"the pause lasts its 2s, not until the heal", c1, SpanPause, 200 * ms, 2200 * ms, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range spansOn(tl, tc.lane, tc.kind) {
				if s.From == tc.from && s.To == tc.to && s.Client == tc.client {
					return
				}
			}
			t.Errorf("no %s span %d..%d for client %d on lane %d: %+v", tc.kind, tc.from, tc.to, tc.client, tc.lane, spansOn(tl, tc.lane, tc.kind))
		})
	}

	var stored, refused int
	for _, m := range tl.Marks {
		if m.Kind == MarkStore {
			switch m.Status {
			case history.Ok:
				stored++
			case history.Fail:
				refused++
				if m.Fence != 33 || m.Label != "refused fence 33" {
					t.Errorf("refused store mark %+v, want fence 33", m)
				}
			}
		}
	}
	if stored != 1 || refused != 1 {
		t.Errorf("storage marks: %d stored, %d refused; want 1 and 1", stored, refused)
	}
	svg := tl.SVG()
	wellFormed(t, svg)
	for _, want := range []string{"paused 2s", "refused fence 33", "read 0 → write 1 · fence 34", "holds L · fence 33", "Storage", "time (s)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if len(tl.Steps) != 3 || tl.Steps[1].Text != "2. Client 1 stops for a long GC pause; its lease expires." {
		t.Errorf("steps %+v", tl.Steps)
	}
}

// TestTimelineClockJump: the recorded redlock-clock-jump run. C's hold for
// client 1 ends at the clock jump; the overlap the checker found is drawn
// and both beliefs are marked as evidence.
func TestTimelineClockJump(t *testing.T) {
	events, res := load(t, "redlock-clock-jump")
	if res.Verdict != checker.Unsafe || len(res.Mutex.Overlaps) != 1 {
		t.Fatalf("recorded history checks %s with %d overlaps", res.Verdict, len(res.Mutex.Overlaps))
	}
	tl := NewTimeline("clock jump", events, res, []string{"A", "B", "C", "D", "E"}, 2)
	var jump int64
	for _, e := range events {
		if e.Type == history.Fault && e.Op == "clock-jump" {
			jump = e.Time
		}
	}
	c := laneIndex(t, tl, LaneNode, "C")
	holds := spansOn(tl, c, SpanHold)
	if len(holds) != 2 || holds[0].Client != 1 || holds[0].To != jump || holds[1].Client != 2 {
		t.Errorf("holds on C: %+v; want client 1's ending at the jump (%d), then client 2's", holds, jump)
	}
	if clocks := spansOn(tl, c, SpanClock); len(clocks) != 1 || clocks[0].Label != "clock +15s" {
		t.Errorf("clock spans on C: %+v", clocks)
	}
	for _, n := range []string{"D", "E"} {
		if h := spansOn(tl, laneIndex(t, tl, LaneNode, n), SpanHold); len(h) != 1 || h[0].Client != 2 {
			t.Errorf("holds on %s: %+v; want client 2's only", n, h)
		}
	}
	if n := len(spansOn(tl, laneIndex(t, tl, LaneClient, "client 1"), SpanNetwork)); n != 1 {
		t.Errorf("client 1 has %d network spans, want its partition", n)
	}
	overlaps, evidence := 0, 0
	for _, s := range tl.Spans {
		if s.Kind == SpanOverlap {
			overlaps++
		}
		if s.Kind == SpanBelief && s.Evidence {
			evidence++
		}
	}
	if overlaps != 1 || evidence != 2 {
		t.Errorf("%d overlap bands and %d evidence beliefs; want 1 and 2", overlaps, evidence)
	}
	svg := tl.SVG()
	wellFormed(t, svg)
	if !strings.Contains(svg, "clients 1 and 2 both hold L") {
		t.Error("SVG lacks the overlap's label")
	}
}

// TestTimelineLostUpdate: the recorded redis-ttl-expiry run; both writes
// of the lost update are marked.
func TestTimelineLostUpdate(t *testing.T) {
	events, res := load(t, "redis-ttl-expiry")
	tl := NewTimeline("ttl expiry", events, res, []string{"A"}, 2)
	n := 0
	for _, m := range tl.Marks {
		if m.Kind == MarkWrite && m.Evidence == "lost update" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d writes marked as lost update, want 2", n)
	}
	wellFormed(t, tl.SVG())
}

// TestTimelineLeak: the recorded postgres-pool-mismatch run; the node's
// hold stays open to the end as leaked.
func TestTimelineLeak(t *testing.T) {
	events, res := load(t, "postgres-pool-mismatch")
	if res.Verdict != checker.Leaked {
		t.Fatalf("recorded history checks %s", res.Verdict)
	}
	tl := NewTimeline("pool mismatch", events, res, []string{"pg"}, 2)
	holds := spansOn(tl, laneIndex(t, tl, LaneNode, "pg"), SpanHold)
	if len(holds) != 1 || !holds[0].Evidence || holds[0].To != tl.End {
		t.Errorf("pg holds %+v; want one, leaked, to the end %d", holds, tl.End)
	}
	wellFormed(t, tl.SVG())
}

// TestTimelineBeliefsAreTheCheckersHolds: the clients' beliefs are the
// holds the checker derived. A watchdog's renewal that finds the lease gone
// ends client 1's belief there, not at its release 3 s later, so the
// timeline shows no overlap with client 2, as the checker finds none.
func TestTimelineBeliefsAreTheCheckersHolds(t *testing.T) {
	ev := func(seq, t int64, p int, typ history.Type, op, tok, reason string) history.Event {
		return history.Event{Seq: seq, Time: t * ms, Process: p, Type: typ, Op: op, Key: "L", Token: tok, Reason: reason}
	}
	events := []history.Event{
		ev(1, 0, 1, history.Invoke, history.OpAcquire, "", ""), ev(2, 10, 1, history.Ok, history.OpAcquire, "a", ""),
		ev(3, 676, 1, history.Note, history.OpRenew, "a", history.ReasonNotHeld),
		ev(4, 700, 2, history.Invoke, history.OpAcquire, "", ""), ev(5, 710, 2, history.Ok, history.OpAcquire, "b", ""),
		ev(6, 800, 2, history.Invoke, history.OpRelease, "b", ""), ev(7, 810, 2, history.Ok, history.OpRelease, "b", ""),
		ev(8, 4000, 1, history.Invoke, history.OpRelease, "a", ""), ev(9, 4010, 1, history.Fail, history.OpRelease, "a", history.ReasonNotHeld),
	}
	res := check(t, events)
	if res.Mutex.OverlapCount != 0 || len(res.Derived.Holds()) != 2 {
		t.Fatalf("checked %s with %d overlaps and %d holds", res.Verdict, res.Mutex.OverlapCount, len(res.Derived.Holds()))
	}
	for _, r := range []checker.Result{res, {}} { // the check's holds, or the history's
		tl := NewTimeline("lost renewal", events, r, []string{"A"}, 2)
		b := spansOn(tl, laneIndex(t, tl, LaneClient, "client 1"), SpanBelief)
		if len(b) != 1 || b[0].From != 10*ms || b[0].To != 676*ms || b[0].Open || !strings.Contains(b[0].Note, "until it learned it had lost the lease at t=0.676s") {
			t.Errorf("client 1's beliefs: %+v; want one from 10ms to the renewal at 676ms", b)
		}
		if b := spansOn(tl, laneIndex(t, tl, LaneClient, "client 2"), SpanBelief); len(b) != 1 || b[0].To != 800*ms {
			t.Errorf("client 2's beliefs: %+v; want one to its release at 800ms", b)
		}
	}
	if got := strings.Join(StateAt(events, []string{"A"}, 2, 750*ms), "\n"); !strings.Contains(got, "Client 1   holds nothing") {
		t.Errorf("at 750ms, client 1 still believes it holds the lock:\n%s", got)
	}
}

// TestStateAt is workshop mode's view of the fenced-pause story.
func TestStateAt(t *testing.T) {
	events, _ := load(t, "fenced-pause")
	tests := []struct {
		at   int64
		want []string
	}{
		{50 * ms, []string{"Redis A    free", "Client 1   holds nothing", "Client 2   holds nothing"}},
		{500 * ms, []string{"Redis A    client 1 (TTL ends in 600ms)", "Client 1   holds the lock with fence 33, for 600ms more; paused 2s"}},
		{1320 * ms, []string{"Redis A    client 2 (TTL ends in 980ms)", "Client 1   holds nothing; paused 2s", "Client 2   holds the lock with fence 34"}},
	}
	for _, tc := range tests {
		got := strings.Join(StateAt(events, []string{"A"}, 2, tc.at), "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("at %dms: state lacks %q:\n%s", tc.at/ms, w, got)
			}
		}
	}
	when, what := NextExpiry(events, []string{"A"}, 500*ms)
	if when != 1100*ms || !strings.Contains(what, "client 1") {
		t.Errorf("NextExpiry = %d %q; want client 1's at 1.1s", when, what)
	}
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct{ span, want int64 }{
		{int64(1.2e9), int64(0.1e9)},
		{int64(2.5e9), int64(0.25e9)},
		{int64(10e9), int64(1e9)},
	} {
		if got := tickStep(tc.span); got != tc.want {
			t.Errorf("tickStep(%d) = %d, want %d", tc.span, got, tc.want)
		}
	}
}

// TestClientColorsAreNotTheLegends: no client is drawn in a colour the
// legend gives a meaning (write accepted, refused, evidence, clock jump,
// network fault), so a key held by client 2 on C, D and E does not read
// as a write accepted.
func TestClientColorsAreNotTheLegends(t *testing.T) {
	legend := map[string]string{"#16a34a": "write accepted", "#dc2626": "refused and evidence", "#d97706": "clock jump",
		"#f59e0b": "clock jump", "#f97316": "network fault", "#059669": "green"}
	for c := 1; c <= len(clientColors); c++ {
		if what, ok := legend[clientColor(c)]; ok {
			t.Errorf("client %d is drawn in %s, the legend's %s", c, clientColor(c), what)
		}
	}
}

// TestFaultLabelCutOff: a fault whose kind silences the links it strikes
// (the registry's Shape.Silences: a partition, a replication lag) is
// labelled by what it cuts a lane off from; a latency, which slows its
// links, is labelled by its links.
func TestFaultLabelCutOff(t *testing.T) {
	for op, want := range map[string]string{
		"partition":       "cut off from A,B",
		"replication-lag": "cut off from A,B",
		"latency":         "latency to A,B",
	} {
		b := &builder{t: &Timeline{}, lane: map[string]int{}}
		e := history.Event{Type: history.Fault, Op: op, Fault: &history.FaultFields{Links: []string{"A", "B"}}}
		if _, _, label := b.faultLane(e); label != want {
			t.Errorf("%s: label %q, want %q", op, label, want)
		}
	}
}
