package cli

// reap_test.go: what killed and hung-up runs leave, and the starts of sim
// that remove it (issue 28).

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEveryStartReaps: every start of sim removes a temp dir whose owner
// is gone, but the commands that only print (sim alone, version, help,
// completion) and clean, which reaps itself.
func TestEveryStartReaps(t *testing.T) {
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	// pid 99999999 is above any pid_max: its owner is gone.
	left := filepath.Join(scratch, "locksim-run-o99999999.1-test")
	for _, c := range []struct {
		args  []string
		reaps bool
	}{
		{[]string{"list"}, true},
		{[]string{"locks"}, true},
		{[]string{"explain", "redlock-clock-jump"}, true},
		{[]string{"schema"}, true},
		{[]string{"run", "no-such-story"}, true},
		{[]string{"sweep", "merge", filepath.Join(scratch, "no-such-shard")}, true},
		{nil, false},
		{[]string{"version"}, false},
		{[]string{"--version"}, false},
		{[]string{"help"}, false},
		{[]string{"help", "run"}, false},
		{[]string{"run", "--help"}, false},
		{[]string{"completion", "bash"}, false},
		{[]string{"__complete", "run", ""}, false},
	} {
		t.Run(strings.Join(append([]string{"sim"}, c.args...), " "), func(t *testing.T) {
			if err := os.MkdirAll(left, 0o755); err != nil {
				t.Fatal(err)
			}
			_, _, errb := simStart(t, c.args...)
			_, err := os.Stat(left)
			if reaped := os.IsNotExist(err); reaped != c.reaps {
				t.Errorf("reaped %v, want %v (stderr %.200q)", reaped, c.reaps, errb)
			}
			if c.reaps && !strings.HasPrefix(errb, "sim: removed ") {
				t.Errorf("stderr does not say what the start removed: %.200q", errb)
			}
		})
	}
}

// newMark is an environment variable that marks the processes of one
// test, and those they start.
func newMark() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "LOCKSIM_TEST_MARK=" + hex.EncodeToString(b)
}

// simProcess is sim (this test binary) as a process of its own, with
// TMPDIR and, unless "", mark in its environment.
func simProcess(tmpdir, mark string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), simMainEnv+"=1", "TMPDIR="+tmpdir)
	if mark != "" {
		cmd.Env = append(cmd.Env, mark)
	}
	return cmd
}

// ownedBy lists the paths under root whose name marks pid as their owner
// (env's temp dir names: locksim-...-o<pid>.<start>-<random>).
func ownedBy(root string, pid int) []string {
	paths, _ := filepath.Glob(filepath.Join(root, "locksim-*"))
	var out []string
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), fmt.Sprintf("-o%d.", pid)) {
			out = append(out, p)
		}
	}
	return out
}

// waitUntil polls cond every 50 ms until it holds or d has passed, and
// says whether it held.
func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestKilledRunsReapedByNextRun plays the user's path: runs killed with
// SIGKILL at a random moment after their servers started, then one
// ordinary sim run, whose start must remove every temp dir and /dev/shm
// entry they left, and say so.
func TestKilledRunsReapedByNextRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	tmp := t.TempDir()
	scratch := filepath.Join(tmp, "tmp")
	os.Mkdir(scratch, 0o755)
	mark := newMark()
	var killed []int
	for i, story := range []string{"postgres-connection-drop", "redlock-clock-jump", "fenced-pause"} {
		cmd := simProcess(scratch, mark, "run", story, "-q", "--out", filepath.Join(tmp, "runs", fmt.Sprint(i)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		if !waitUntil(20*time.Second, func() bool { return len(ownedBy(scratch, pid)) > 0 }) {
			cmd.Process.Kill()
			t.Fatalf("sim run %s made no temp dir in 20 s", story)
		}
		// A random moment of its servers' start or its story (up to 1.5 s).
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(1500*time.Millisecond)))
		time.Sleep(time.Duration(n.Int64()))
		cmd.Process.Kill()
		cmd.Wait()
		killed = append(killed, pid)
	}
	leftBy := func() []string {
		var out []string
		for _, pid := range killed {
			out = append(out, ownedBy(scratch, pid)...)
			out = append(out, ownedBy("/dev/shm", pid)...)
		}
		return out
	}
	if len(leftBy()) == 0 {
		t.Fatal("the killed runs left nothing: the test reaps nothing")
	}
	// The kernel kills the children of a killed harness (Pdeathsig); a
	// PostgreSQL backend notices its postmaster died within a moment.
	dirs := append([]string{scratch}, leftBy()...)
	if !waitUntil(15*time.Second, func() bool { return len(markedProcs(mark, dirs...)) == 0 }) {
		t.Fatalf("the killed runs' processes outlived them:\n%s", strings.Join(markedProcs(mark, dirs...), "\n"))
	}
	// One ordinary start.
	run := simProcess(scratch, "", "run", "redis-ttl-expiry", "-q", "--out", filepath.Join(tmp, "runs", "ordinary"))
	out, err := run.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() == exitHarness) {
		t.Fatalf("sim run: %v\n%s", err, out)
	}
	var reaped int
	if i := strings.Index(string(out), "sim: removed "); i >= 0 {
		fmt.Sscanf(string(out[i:]), "sim: removed %d temp dir(s)", &reaped)
	}
	if reaped == 0 {
		t.Fatalf("the start did not say it removed the killed runs' temp dirs:\n%s", out)
	}
	if left := leftBy(); len(left) > 0 {
		t.Errorf("left after %d kills and one sim run: %v", len(killed), left)
	}
	if rest, _ := os.ReadDir(scratch); len(rest) > 0 {
		t.Errorf("TMPDIR holds %d entries after the sim run, want none: %v", len(rest), rest)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// TestHangUpCleansUp: a workshop whose terminal closed gets SIGHUP; it
// stops its servers and removes its temp dirs as an interrupt does, with
// no later start of sim to reap them.
func TestHangUpCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	tmp := t.TempDir()
	story := filepath.Join(tmp, "long.yaml")
	os.WriteFile(story, []byte(longStory), 0o644)
	scratch := filepath.Join(tmp, "tmp")
	os.Mkdir(scratch, 0o755)
	mark := newMark()
	cmd := simProcess(scratch, mark, "run", story, "--step", "--out", filepath.Join(tmp, "run"))
	stdin, _ := cmd.StdinPipe() // never written: the workshop waits for Enter
	defer stdin.Close()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Split(bufio.ScanWords) // the prompt has no line end
		said := false
		for sc.Scan() {
			if sc.Text() == "[Enter]" && !said {
				close(waiting)
				said = true
			}
		}
	}()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the workshop never waited for Enter")
	}
	pid := cmd.Process.Pid
	dirs := append(ownedBy(scratch, pid), ownedBy("/dev/shm", pid)...)
	if len(ownedBy(scratch, pid)) == 0 {
		t.Fatal("the workshop has no temp dir: nothing to clean up")
	}
	cmd.Process.Signal(syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 30 s after SIGHUP")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit after SIGHUP: %v, want code %d", err, exitInterrupted)
	}
	if left := append(ownedBy(scratch, pid), ownedBy("/dev/shm", pid)...); len(left) > 0 {
		t.Errorf("left after SIGHUP: %v", left)
	}
	if procs := markedProcs(mark, append([]string{scratch}, dirs...)...); len(procs) > 0 {
		t.Errorf("running after SIGHUP:\n%s", strings.Join(procs, "\n"))
	}
}
