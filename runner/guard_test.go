package runner

import (
	"os/exec"
	"strings"
	"testing"
	"time"
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
	why, slow := tooSlow(worst, time.Second, DefaultMargin)
	if !slow || !strings.Contains(why, "unknown: the machine was too slow for this story") {
		t.Fatalf("tooSlow(%v) = %q, %v", worst, why, slow)
	}
	if _, slow := tooSlow(DefaultMargin/2, 0, DefaultMargin); slow {
		t.Fatalf("a stall within the margin is not too slow")
	}
}
