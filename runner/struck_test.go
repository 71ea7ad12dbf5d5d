package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
)

// TestStruckOff: a fault whose critical section ended on the side of its
// lease's end it was planned to (however long it ran) says nothing; one
// that ended on the other side, or within the tolerance (5% of the TTL)
// of the end where the plan was clear of it, says both; an unmeasured one
// says nothing.
func TestStruckOff(t *testing.T) {
	ttl := 100 * time.Millisecond
	ms := time.Millisecond
	for _, c := range []struct {
		want, size, overrun time.Duration
		off                 string
	}{
		{20 * ms, 31 * ms, -58 * ms, ""},                             // a 0.2-TTL pause after a slow read: still well inside
		{300 * ms, 311 * ms, 213 * ms, ""},                           // a 3-TTL pause struck long: still well past
		{51 * ms, 52 * ms, 35 * ms, "ended 0.35 TTL past its lease"}, // inside as planned, past as struck
		{113 * ms, 113 * ms, -1 * ms, "ended 0.01 TTL inside its lease"},
		{80 * ms, 90 * ms, 2 * ms, "was to end 0.18 TTL inside its lease"}, // too near the end to tell
		{80 * ms, 0, 0, ""},
	} {
		s := Struck{Planned: Planned{Fault: "pause", Client: 1}, Want: c.want, Size: c.size, Work: 2 * ms, Overrun: c.overrun, Overran: c.size != 0}
		if got := s.Off(ttl); c.off == "" && got != "" || !strings.Contains(got, c.off) {
			t.Errorf("want %v, struck %v, overrun %v: %q, want %q", c.want, c.size, c.overrun, got, c.off)
		}
	}
}

// TestMeasureAPause: a pause measured from its SIGSTOP to when its client
// ran again (the end of the client's stall report, later than the
// SIGCONT), and its critical section's overrun from the acquire's
// invocation, the granted TTL and the held write's completion; a write
// completed before the strike is not the held one.
func TestMeasureAPause(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	events := []history.Event{
		{Process: 1, Op: history.OpAcquire, Type: history.Invoke, Time: ms(0)},
		{Process: 1, Op: history.OpAcquire, Type: history.Ok, Time: ms(1), TTL: ms(100)},
		{Process: 1, Op: history.OpWrite, Type: history.Invoke, Time: ms(2)},
		{Process: 1, Op: history.OpWrite, Type: history.Ok, Time: ms(5)},
		{Process: 1, Op: history.OpAcquire, Type: history.Invoke, Time: ms(10)},
		{Process: 1, Op: history.OpAcquire, Type: history.Ok, Time: ms(11), TTL: ms(100)},
		{Process: 1, Op: history.OpWrite, Type: history.Invoke, Time: ms(12)},
		{Process: 2, Op: history.OpWrite, Type: history.Ok, Time: ms(50)},
		{Process: 1, Op: history.OpWrite, Type: history.Ok, Time: ms(160)},
	}
	acquire, write, done := heldSection(events, 1, ms(13))
	if acquire == nil || acquire.Time != ms(10) || acquire.TTL != ms(100) || write == nil || write.Time != ms(12) || done == nil || done.Time != ms(160) {
		t.Fatalf("held section: acquire %+v, write %+v, done %+v", acquire, write, done)
	}
	if overrun := time.Duration(done.Time - (acquire.Time + acquire.TTL)); overrun != 50*time.Millisecond {
		t.Errorf("overrun %v, want 50ms past the lease", overrun)
	}
	if _, _, done := heldSection(events, 1, ms(170)); done != nil {
		t.Errorf("a strike after the last write completed found %+v", done)
	}
	stalls := map[int][]protocol.Stall{1: {{From: 1000 - ms(8), To: 1000 + ms(146)}}}
	got := measureSpan(1000, 1000+ms(141), stalls[1])
	if got != 146*time.Millisecond {
		t.Errorf("pause as struck: %v, want 146ms (the client ran again 5ms after its SIGCONT)", got)
	}
	if got := measureSpan(1000, 1000+ms(141), []protocol.Stall{{From: 1000 - ms(8), To: 1000 + ms(140)}}); got != 141*time.Millisecond {
		t.Errorf("a stall report ending before the SIGCONT's instant was read: %v, want the SIGCONT's 141ms", got)
	}
	if got := measureSpan(1000, 1000+ms(141), nil); got != 141*time.Millisecond {
		t.Errorf("pause as signalled: %v, want 141ms", got)
	}
}

// TestJudgeOffPlan: a generator trial whose fault struck off its plan gets
// no verdict, safe or unsafe, and says why; as planned, it keeps its own.
func TestJudgeOffPlan(t *testing.T) {
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []checker.Verdict{checker.Safe, checker.Unsafe} {
		res, voided := Judge(checker.Result{Verdict: v}, sc, nil, &history.Machine{OffPlan: "pause 0.80 TTL planned, 0.86 TTL struck"}, nil)
		if !voided || res.Verdict != checker.Unknown || !strings.Contains(res.Summary, "the fault struck off its plan: pause 0.80 TTL planned, 0.86 TTL struck") {
			t.Errorf("%s off its plan: %s (voided %v) %q", v, res.Verdict, voided, res.Summary)
		}
	}
	if res, voided := Judge(checker.Result{Verdict: checker.Safe}, sc, nil, &history.Machine{}, nil); voided || res.Verdict != checker.Safe {
		t.Errorf("safe as planned: %s", res.Verdict)
	}
}
