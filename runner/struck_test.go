package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
)

// TestStruckOff: a fault that struck within the tolerance (5% of the TTL,
// at least 2ms) of its plan says nothing; one off by more says both sizes
// in TTLs; an unmeasured one says nothing.
func TestStruckOff(t *testing.T) {
	ttl := 100 * time.Millisecond
	for _, c := range []struct {
		want, size time.Duration
		off        string
	}{
		{80 * time.Millisecond, 84 * time.Millisecond, ""},
		{80 * time.Millisecond, 86 * time.Millisecond, "pause 0.80 TTL planned, 0.86 TTL struck (tolerance 0.05 TTL)"},
		{80 * time.Millisecond, 74 * time.Millisecond, "pause 0.80 TTL planned, 0.74 TTL struck"},
		{80 * time.Millisecond, 0, ""},
		{0, 86 * time.Millisecond, ""},
	} {
		s := Struck{Planned: Planned{Fault: "pause"}, Want: c.want, Size: c.size}
		if got := s.Off(ttl); c.off == "" && got != "" || !strings.HasPrefix(got, c.off) {
			t.Errorf("want %v, struck %v: %q, want %q", c.want, c.size, got, c.off)
		}
	}
	if got := (Struck{Planned: Planned{Fault: "pause"}, Want: 20 * time.Millisecond, Size: 21900 * time.Microsecond}).Off(20 * time.Millisecond); got != "" {
		t.Errorf("1.9ms off a 20ms TTL is within the 2ms floor: %q", got)
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
	stalls := map[int][]worker.Stall{1: {{From: 1000 - ms(8), To: 1000 + ms(146)}}}
	got := measureSpan(1000, 1000+ms(141), stalls[1])
	if got != 146*time.Millisecond {
		t.Errorf("pause as struck: %v, want 146ms (the client ran again 5ms after its SIGCONT)", got)
	}
	if got := measureSpan(1000, 1000+ms(141), []worker.Stall{{From: 1000 - ms(8), To: 1000 + ms(140)}}); got != 141*time.Millisecond {
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
	for _, v := range []string{checker.Safe, checker.Unsafe} {
		res, voided := Judge(checker.Result{Verdict: v}, sc, nil, &history.Machine{OffPlan: "pause 0.80 TTL planned, 0.86 TTL struck"}, nil)
		if !voided || res.Verdict != checker.Unknown || !strings.Contains(res.Summary, "the fault struck off its plan: pause 0.80 TTL planned, 0.86 TTL struck") {
			t.Errorf("%s off its plan: %s (voided %v) %q", v, res.Verdict, voided, res.Summary)
		}
	}
	if res, voided := Judge(checker.Result{Verdict: checker.Safe}, sc, nil, &history.Machine{}, nil); voided || res.Verdict != checker.Safe {
		t.Errorf("safe as planned: %s", res.Verdict)
	}
}
