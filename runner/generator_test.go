package runner

import (
	"context"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/scenarios"
)

// TestTrialsJudgedByTheirOwnPauses plays gen-pause's schedule (a client
// SIGSTOPped for 3 TTLs in its critical section) for several trials on one
// environment. The paused client reports its stall when it wakes, which
// is often after its trial ended: that report must be judged against the
// pause that caused it, whichever trial reads it, so no trial may end
// unknown for a stall the schedule caused (it once did: trial 2 blamed
// client 2, paused on purpose by trial 1). Every trial also loses an
// update: the pause outlasts the lease, and three clients go on.
func TestTrialsJudgedByTheirOwnPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, PostgreSQL and client processes")
	}
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	trials, err := OpenTrials(ctx, sc, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer trials.Close()
	for i := 0; i < 5; i++ {
		tr, err := trials.Play(ctx, *sc.Generator, sc.TTL.Duration, TrialSeed(7, 0, i))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Injected != 1 {
			t.Fatalf("trial %d: %d faults struck, want the planned pause", i+1, tr.Injected)
		}
		if tr.Check.Verdict != checker.Unsafe {
			t.Errorf("trial %d: %s; want unsafe (a pause of 3 TTLs in a critical section)", i+1, tr.Check.Summary)
		}
	}
}
