package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/locksim/locksim/clockshim"
)

// TestClockHook builds a small program with the overlay etcd is built
// with and checks that the clock faults reach its Go runtime as they
// reach a C server under the shim: a jump moves the wall clock alone, a
// rate moves both clocks and the timers with them. Without the hook the
// program reads the real clocks and every check fails.
func TestClockHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Go runtime with the overlay (about a minute)")
	}
	dir := t.TempDir()
	overlay, err := writeOverlay("testdata/probe", dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, ".")
	build.Dir = "testdata/probe"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -overlay: %v\n%s", err, out)
	}
	ctl, err := clockshim.NewControl(filepath.Join(dir, "clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), clockshim.EnvFile+"="+ctl.Path())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	ask := func(line string) string {
		t.Helper()
		fmt.Fprintln(stdin, line)
		if !lines.Scan() {
			t.Fatalf("probe: no answer to %q", line)
		}
		return lines.Text()
	}
	now := func() (wall time.Time, mono time.Duration) {
		t.Helper()
		var w, m int64
		if _, err := fmt.Sscan(ask("now"), &w, &m); err != nil {
			t.Fatal(err)
		}
		return time.Unix(0, w), time.Duration(m)
	}
	near := func(what string, got, want, tol time.Duration) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s: %v, want %v ± %v", what, got, want, tol)
		}
	}

	wall, mono0 := now()
	near("wall clock before any fault, from the real one", wall.Sub(time.Now()), 0, 100*time.Millisecond)

	ctl.Jump(time.Hour)
	wall, mono := now()
	near("wall clock after a 1h jump, from the real one", wall.Sub(time.Now()), time.Hour, 100*time.Millisecond)
	near("monotonic clock across the jump", mono-mono0, 0, 200*time.Millisecond)

	ctl.SetRate(2)
	_, m1 := now()
	time.Sleep(500 * time.Millisecond)
	_, m2 := now()
	near("monotonic clock over 500ms at rate 2", m2-m1, time.Second, 150*time.Millisecond)

	start := time.Now()
	if got := ask("sleep 1s"); got != "slept" {
		t.Fatalf("sleep: %q", got)
	}
	near("real length of a 1s sleep at rate 2", time.Since(start), 500*time.Millisecond, 150*time.Millisecond)

	ctl.SetRate(0.5)
	start = time.Now()
	if got := ask("sleep 200ms"); got != "slept" {
		t.Fatalf("sleep: %q", got)
	}
	near("real length of a 200ms sleep at rate 0.5", time.Since(start), 400*time.Millisecond, 150*time.Millisecond)
}
