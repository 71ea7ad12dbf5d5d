package runner

import (
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
)

// TestGuardSeesAStall stops this very process for 300ms (a child sends
// SIGSTOP to its parent, then SIGCONT), as a loaded machine stalls a
// harness, and requires the guard to have seen it.
func TestGuardSeesAStall(t *testing.T) {
	g := startGuard(10 * time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	stall := exec.Command("sh", "-c", "kill -STOP $PPID; sleep 0.3; kill -CONT $PPID")
	if err := stall.Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	worst, _ := g.Stop()
	if worst < 250*time.Millisecond {
		t.Fatalf("worst stall seen %v, want at least 250ms after a 300ms stop", worst)
	}
	why, slow := tooSlow(worst, time.Second, scenarios.DefaultMargin)
	if !slow || !strings.Contains(why, "the harness stalled") {
		t.Fatalf("tooSlow(%v) = %q, %v", worst, why, slow)
	}
	if _, slow := tooSlow(scenarios.DefaultMargin/2, 0, scenarios.DefaultMargin); slow {
		t.Fatalf("a stall within the margin is not too slow")
	}
}

// TestClientStallsOutsidePauses: a client's stall counts unless the story
// paused that client then.
func TestClientStallsOutsidePauses(t *testing.T) {
	pauses := map[int]spans{1: {{1e9, math.MaxInt64}}}
	pauses[1].end(3e9)
	paused := map[int][]protocol.Stall{1: {{From: 1.05e9, To: 2.5e9}}}
	if why, slow := clientTooSlow(paused, pauses, scenarios.DefaultMargin, 0); slow {
		t.Fatalf("a stall inside the story's own pause counted: %s", why)
	}
	busy := map[int][]protocol.Stall{2: {{From: 1.05e9, To: 1.5e9}}}
	if why, slow := clientTooSlow(busy, pauses, scenarios.DefaultMargin, 0); !slow || !strings.Contains(why, "client 2 did not run for 450ms") {
		t.Fatalf("client 2's stall: %q, %v", why, slow)
	}
	wake := map[int][]protocol.Stall{1: {{From: 3.001e9, To: 3.027e9}}}
	if why, slow := clientTooSlow(wake, pauses, 25*time.Millisecond, 0); slow {
		t.Fatalf("a stall in client 1's wake-up from its pause counted: %s", why)
	}
	after := map[int][]protocol.Stall{1: {{From: 3.2e9, To: 3.5e9}}}
	if _, slow := clientTooSlow(after, pauses, scenarios.DefaultMargin, 0); !slow {
		t.Fatalf("a stall of client 1 after its pause was healed did not count")
	}
	// A pause with a duration resumes by itself: its span ends then, and
	// a later heal does not stretch it.
	timed := spans{{1e9, 1.3e9}}
	timed.end(3e9)
	if timed[0][1] != 1.3e9 {
		t.Fatalf("a heal after a timed pause moved its end to %v", timed[0][1])
	}
	late := map[int][]protocol.Stall{1: {{From: 1.9e9, To: 2.4e9}}}
	if _, slow := clientTooSlow(late, map[int]spans{1: timed}, scenarios.DefaultMargin, 0); !slow {
		t.Fatalf("a stall of client 1 after its timed pause resumed did not count")
	}
	// Reported in the next trial (time zero at 5s): still the pause's.
	if why, slow := clientTooSlow(paused, pauses, scenarios.DefaultMargin, 5e9); slow {
		t.Fatalf("a stall inside an earlier trial's pause counted: %s", why)
	}
	if why, _ := clientTooSlow(busy, pauses, scenarios.DefaultMargin, 1e9); !strings.Contains(why, "around t=0.050s") {
		t.Fatalf("the stall's time is not on the record's clock: %q", why)
	}
	if p := pressure(1000, 501000, time.Second); p != 0.5 {
		t.Fatalf("pressure = %v, want 0.5", p)
	}
}
