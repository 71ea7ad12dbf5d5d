package checker

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/history"
)

// jobHistory is a history of two clients that each take the lock in turn
// and run the job once, writing the counter (client 1's write outcome as
// given, fail with reason r when not ok), then the job table's rows as
// the harness adds them: one job note a period given, by client.
func jobHistory(first history.Type, reason string, rows ...struct {
	client int
	period string
}) []history.Event {
	ms := func(n int64) int64 { return n * 1e6 }
	evs := []history.Event{
		{Time: ms(0), Process: 1, Type: history.Invoke, Op: history.OpAcquire, Key: "L", Token: "a"},
		{Time: ms(1), Process: 1, Type: history.Ok, Op: history.OpAcquire, Key: "L", Token: "a", LeaseEnd: ms(100)},
		{Time: ms(2), Process: 1, Type: history.Invoke, Op: history.OpWrite, Key: "L", Token: "a"},
		{Time: ms(150), Process: 1, Type: first, Op: history.OpWrite, Key: "L", Token: "a", Reason: reason,
			Read: history.Int64(0), Wrote: history.Int64(1)},
		{Time: ms(200), Process: 2, Type: history.Invoke, Op: history.OpAcquire, Key: "L", Token: "b"},
		{Time: ms(201), Process: 2, Type: history.Ok, Op: history.OpAcquire, Key: "L", Token: "b", LeaseEnd: ms(300)},
		{Time: ms(202), Process: 2, Type: history.Invoke, Op: history.OpWrite, Key: "L", Token: "b"},
		{Time: ms(210), Process: 2, Type: history.Ok, Op: history.OpWrite, Key: "L", Token: "b", Read: history.Int64(0), Wrote: history.Int64(1)},
	}
	if first == history.Ok {
		evs[7].Read, evs[7].Wrote = history.Int64(1), history.Int64(2)
	}
	for _, r := range rows {
		evs = append(evs, history.Event{Time: ms(400), Process: r.client, Type: history.Note, Op: history.OpJob, Job: "counter", Period: r.period})
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return evs
}

type row = struct {
	client int
	period string
}

// TestJobRanTwice: two rows of one (job, period) make the run unsafe
// whatever the counter shows; one row a period is safe.
func TestJobRanTwice(t *testing.T) {
	cases := []struct {
		name    string
		events  []history.Event
		verdict Verdict
		twice   int
	}{
		// Client 1 died mid-run (its write never written: refused here
		// by the storage, reason read) and client 2 ran the same period
		// again: the counter went 0 -> 1 once, the job ran twice.
		{"redo after a half-done run", jobHistory(history.Fail, history.ReasonRead, row{1, "09:00"}, row{2, "09:00"}), Unsafe, 1},
		// Client 1 was displaced mid-run by client 2's claim (token-cas):
		// its write was refused, the counter is right, the job ran twice.
		{"token-cas preemption", jobHistory(history.Fail, history.ReasonToken, row{1, "09:00"}, row{2, "09:00"}), Unsafe, 1},
		// Two ordinary runs of two periods.
		{"one run a period", jobHistory(history.Ok, "", row{1, "09:00"}, row{2, "09:01"}), Safe, 0},
		// A skipped period: one half-done run, nobody redid it.
		{"skipped, not retried", jobHistory(history.Fail, history.ReasonRead, row{1, "09:00"}, row{2, "09:01"}), Safe, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.events, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != c.verdict || r.Jobs.RanTwiceCount != c.twice || r.Jobs.Rows != 2 {
				t.Fatalf("verdict %s, ran twice %d, rows %d; want %s, %d, 2: %s", r.Verdict, r.Jobs.RanTwiceCount, r.Jobs.Rows, c.verdict, c.twice, r.Summary)
			}
			if c.twice > 0 {
				want := "unsafe: job counter ran 2 times for period 09:00 (clients 1 and 2)"
				if !strings.HasPrefix(r.Summary, want) {
					t.Errorf("summary %q, want it to begin %q", r.Summary, want)
				}
			}
		})
	}
}
