package checker

import (
	"reflect"
	"testing"

	"github.com/locksim/locksim/history"
)

// TestFindings: every finding of a Result comes out once, worst first,
// with its sentence and the events that prove it.
func TestFindings(t *testing.T) {
	ev := func(seq int64) history.Event { return history.Event{Seq: seq, Time: seq * 1e8} }
	var r Result
	r.Damage.LostUpdates = []LostUpdate{{Key: "L", Read: 3, ClientA: 1, ClientB: 2, WriteA: ev(4), WriteB: ev(6)}}
	r.Damage.StaleWrites = []StaleWrite{{Key: "L", Client: 2, Read: 1, Write: ev(9), Detail: "read 1 after 2 was written"}}
	r.Jobs.RanTwice = []RanTwice{{Job: "counter", Period: "09:00", Clients: []int{1, 2}, Rows: []history.Event{ev(13), ev(14)}}}
	r.Fencing.Backwards = []FenceRegression{{Key: "L", Kind: "acquire", Fence: 3, Previous: 5, Event: ev(8), Earlier: ev(5)}}
	r.Mutex.Overlaps = []Overlap{{Key: "L", ClientA: 1, ClientB: 2, From: 5e8, To: 9e8, AcquireA: ev(2), AcquireB: ev(5)}}
	r.Liveness.Leaks = []Leak{{Key: "L", Gone: NeverHeld, FailedAcquire: ev(3), Failures: 2}}
	r.Liveness.Stalls = []Stall{{Key: "L", From: 1e9, To: 3e9, Since: ev(10), Failed: ev(12), Attempts: 7}}
	r.Fencing.RefusedWrites, r.Fencing.Refused = []history.Event{ev(11)}, 1

	got := r.Findings()
	want := []struct {
		kind, sentence string
		seqs           []int64
		bad            bool
	}{
		{FindingLostUpdate, "clients 1 and 2 both read 3 from L and both writes were accepted: one update is lost", []int64{4, 6}, true},
		{FindingStaleWrite, "storage accepted client 2's write on L based on a stale read of 1: read 1 after 2 was written", []int64{9}, true},
		{FindingRanTwice, "job counter ran 2 times for period 09:00 (clients 1 and 2): the job table has a row for each run", []int64{13, 14}, true},
		{FindingTokenBackwards, "fencing token 3 (acquire) came after 5 on L", []int64{5, 8}, true},
		{FindingOverlap, "clients 1 and 2 both held L between t=0.500s and t=0.900s", []int64{2, 5}, true},
		{FindingLeak, r.Liveness.Leaks[0].Sentence(), []int64{3}, true},
		{FindingStall, "no acquire of L granted between t=1.000s and t=3.000s (7 attempts)", []int64{10, 12}, true},
		{FindingRefusedWrite, "the fence refused 1 stale write(s): the defence working", []int64{11}, false},
	}
	if len(got) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		f := got[i]
		var seqs []int64
		for _, e := range f.Events {
			seqs = append(seqs, e.Seq)
		}
		if f.Kind != w.kind || f.Sentence != w.sentence || !reflect.DeepEqual(seqs, w.seqs) || f.Bad != w.bad {
			t.Errorf("finding %d: %s %q %v bad=%v, want %s %q %v bad=%v", i+1, f.Kind, f.Sentence, seqs, f.Bad, w.kind, w.sentence, w.seqs, w.bad)
		}
	}
	if n := len((Result{}).Findings()); n != 0 {
		t.Errorf("a clean check has %d findings", n)
	}
}
