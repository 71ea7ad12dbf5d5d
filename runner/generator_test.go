package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// TestTrialsJudgedByTheirOwnPauses plays gen-pause's schedule (a client
// SIGSTOPped for 3 TTLs in its critical section) for several trials on one
// environment. The paused client reports its stall when it wakes, which
// is often after its trial ended: that report must be judged against the
// pause that caused it, whichever trial reads it, so no trial may end
// unknown for a stall the schedule caused (it once did: trial 2 blamed
// client 2, paused on purpose by trial 1). Every trial also loses an
// update: the pause outlasts the lease, and three clients go on. And every
// pause strikes inside its critical section (pausedInside): between the
// write's read and its completion, which comes after the pause has ended;
// and is measured as it struck (Trial.Struck): SIGSTOP to SIGCONT no
// shorter than planned, the client running again no sooner, its write
// landing past its lease (its write held up no less than the pause less
// the mean work: a pause that strikes during the work overlaps it, since
// the work's sleep runs on while the client is stopped). A trial whose
// pause struck off its plan on a
// loaded machine is unknown, saying so, and nothing else.
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
		if err := pausedInside(tr.Events); err != nil {
			t.Errorf("trial %d: %v", i+1, err)
		}
		planned := time.Duration(sc.Generator.Size)
		if len(tr.Struck) != 1 {
			t.Fatalf("trial %d: %d faults measured, want the pause", i+1, len(tr.Struck))
		}
		s := tr.Struck[0]
		if s.Want != planned || s.Signalled < planned || s.Resumed < s.Signalled || s.Size < planned-s.Work || !s.Overran || s.Overrun < planned-sc.TTL.Duration {
			t.Errorf("trial %d: pause planned %v, measured %+v: want SIGSTOP to SIGCONT at least %v, the client running again no sooner, its write held up no less than that less the work (%v), landing at least %v past its lease",
				i+1, planned, s, planned, s.Work, planned-sc.TTL.Duration)
		}
		t.Logf("trial %d: pause %v planned, %v signalled, client ran again after %v, write held up %v, %v past its lease", i+1, planned, s.Signalled, s.Resumed, s.Size, s.Overrun)
		switch {
		case tr.Check.Verdict == checker.Unknown && tr.Machine.OffPlan != "" && s.Off(sc.TTL.Duration) != "":
			t.Logf("trial %d: unknown on a loaded machine: %s", i+1, tr.Check.Summary)
		case tr.Check.Verdict != checker.Unsafe:
			t.Errorf("trial %d: %s; want unsafe (a pause of 3 TTLs in a critical section)", i+1, tr.Check.Summary)
		}
	}
}

// pausedInside checks that each pause in evs struck inside a critical
// section of its client: a write invoked before the pause and completed
// after it ended. Struck as the write's invocation arrived, a pause once
// reached the worker after its work and write in 1 trial of about 40, and
// that trial counted as safe.
func pausedInside(evs []history.Event) error {
	for i, f := range evs {
		if f.Type != history.Fault || f.Op != "pause" || f.Fault == nil {
			continue
		}
		invoked := -1
		for j := i - 1; j >= 0; j-- {
			if e := evs[j]; e.Process == f.Fault.Client && e.Op == history.OpWrite && e.Type == history.Invoke {
				invoked = j
				break
			}
		}
		if invoked < 0 {
			return fmt.Errorf("the pause of client %d at %v came before any write of it", f.Fault.Client, time.Duration(f.Time))
		}
		for _, e := range evs[invoked+1:] {
			if e.Process != f.Fault.Client || e.Op != history.OpWrite || e.Type == history.Invoke {
				continue
			}
			if ended := f.Time + f.Fault.Lasts; e.Time < ended {
				return fmt.Errorf("client %d's write completed at %v, before its pause (from %v) ended at %v: the pause missed the critical section",
					f.Fault.Client, time.Duration(e.Time), time.Duration(f.Time), time.Duration(ended))
			}
			break
		}
	}
	return nil
}
