package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
)

// The test binary doubles as the sim binary: as a worker when
// LOCKSIM_WORKER=1, as the CLI when simMainEnv=1.
const simMainEnv = "LOCKSIM_TEST_SIM_MAIN"

func TestMain(m *testing.M) {
	worker.MaybeRun()
	if os.Getenv(simMainEnv) == "1" {
		os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sim runs the CLI in this process. What killed runs on this machine
// left is reaped first, so that the start's own reaping, and its line,
// are not part of what a test reads (TestEveryStartReaps calls simStart).
func sim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	env.Reap(env.ReapRoots()...)
	return simStart(t, args...)
}

// simStart runs the CLI in this process, as a start of sim: reaping
// included.
func simStart(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func readResult(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// tooBusy says whether the run in dir had no verdict because the machine
// was too busy for it (result.json's machine.busy), not for another reason.
func tooBusy(t *testing.T, dir string) bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		return false // no counterfactual
	}
	m, _ := readResult(t, dir)["machine"].(map[string]any)
	busy, _ := m["busy"].(string)
	return readResult(t, dir)["verdict"] == "unknown" && busy != ""
}

// playWithCounterfactual runs a catalogue scenario and its counterfactual
// (sim run NAME --counterfactual, with args), and fails the test unless
// the verdict is the expected one and the counterfactual's flips. A run
// the timing guard ended unknown ("the machine was too slow") has no
// verdict to compare: it is played again, at most twice. Any verdict,
// right or wrong, is final. It returns the run directory, its result.json
// and the command's stdout.
func playWithCounterfactual(t *testing.T, name string, args ...string) (string, map[string]any, string) {
	t.Helper()
	var (
		dir       string
		code      int
		out, errb string
		r         map[string]any
	)
	for attempt := 1; ; attempt++ {
		dir = filepath.Join(t.TempDir(), "run")
		code, out, errb = sim(t, append([]string{"run", name, "--counterfactual", "--out", dir}, args...)...)
		if code == 2 || code > 3 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		r = readResult(t, dir)
		if attempt == 3 || !(tooBusy(t, dir) || tooBusy(t, filepath.Join(dir, "counterfactual"))) {
			break
		}
		t.Logf("attempt %d ended unknown on a slow machine; again:\n%s", attempt, out)
	}
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	if r["verdict"] != r["expected"] {
		t.Fatalf("verdict %v, expected %v", r["verdict"], r["expected"])
	}
	cf, _ := r["counterfactual"].(map[string]any)
	if cf == nil || cf["flipped"] != true || cf["verdict"] == r["verdict"] || cf["verdict"] != cf["expected"] {
		t.Fatalf("counterfactual did not flip: %v", cf)
	}
	return dir, r, out
}

// TestCatalogue runs every scenario of the catalogue on real servers, with
// its counterfactual: the verdict comes from the checkers reading the
// history and must match the scenario's expected one, every step's claim
// about the run must hold (else the run exits 2), and the same story
// without its cause (or with its defence broken) must flip the verdict.
// Each run directory, and its counterfactual's, checked again offline
// (sim check, sim report), gives the verdict the run recorded.
func TestCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server, PostgreSQL, pgbouncer and etcd")
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		name := sc.Name
		t.Run(name, func(t *testing.T) {
			dir, r, out := playWithCounterfactual(t, name)
			cf := r["counterfactual"].(map[string]any)
			for _, f := range []string{"history.jsonl", "summary.md", "history.html", "result.json", "counterfactual/result.json"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
					t.Errorf("run directory lacks %s", f)
				}
			}
			t.Logf("%s: %v (%v violation(s), %v ms); counterfactual, %v: %v", name, r["verdict"], r["violations"], r["duration_ms"], cf["change"], cf["verdict"])
			if name == "redlock-clock-jump" {
				// The verdict line names the two clients and their acquires.
				if !strings.Contains(out, "clients 1 and 2 both held lock L") || !strings.Contains(out, "acquire #") {
					t.Errorf("verdict line lacks the evidence: %q", out)
				}
			}
			// Each fault of the history is an annotation in porcupine's page.
			events, err := history.Load(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			html, _ := os.ReadFile(filepath.Join(dir, "history.html"))
			for _, e := range events {
				if e.Type == history.Fault && !bytes.Contains(html, []byte(`"Description":"`+e.Op)) {
					t.Errorf("porcupine visualization lacks the annotation of fault %s on %s", e.Op, e.Target)
				}
			}
			if n := env.LiveCount(); n != 0 {
				t.Errorf("%d child processes still running after the run", n)
			}
			// Checked again offline, the run and its counterfactual get
			// the verdicts they recorded (recheck_test.go).
			recheckOffline(t, dir)
			recheckOffline(t, filepath.Join(dir, "counterfactual"))
		})
	}
}

// TestStoryContradictionExits2: a run that does not happen as its story
// says is a harness failure, with one line naming the step, the claim and
// what happened; never a verdict.
func TestStoryContradictionExits2(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	story := filepath.Join(t.TempDir(), "false.yaml")
	os.WriteFile(story, []byte(`name: false-claim
title: claims client 2 gets a held lock
lock: redis
ttl: 10s
expected: unsafe
steps:
  - do: acquire
    client: 1
    expect: granted
  - do: acquire
    client: 2
    expect: granted
`), 0o644)
	code, out, errb := sim(t, "run", story, "--out", filepath.Join(t.TempDir(), "run"), "-q")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout %s\nstderr %s", code, out, errb)
	}
	want := "false.yaml:10: step 2: the story says client 2's acquire ends granted, but the run shows refused (held)"
	if !strings.Contains(errb, want) || strings.Count(strings.TrimSpace(errb), "\n") != 0 {
		t.Fatalf("stderr %q, want one line containing %q", errb, want)
	}
	if out != "" {
		t.Fatalf("a contradicted story printed a verdict: %q", out)
	}
}

// TestExpectMismatchExits1: --expect that differs from the verdict fails.
func TestExpectMismatchExits1(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	code, out, _ := sim(t, "run", "redlock-clock-jump-control", "--expect", "unsafe", "-q", "--out", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %q", code, out)
	}
	if !strings.Contains(out, "NOT as expected") {
		t.Fatalf("stdout does not say the verdict differed: %q", out)
	}
}

func TestBadInputExits2WithOneLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nlock: redlock\nexpected: safe\nttl: -5s\nsteps:\n  - do: acquire\n    client: 1\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"run", "nope"}, `no scenario named "nope"`},
		{"close names", []string{"run", "redlock-clockjump"}, "did you mean: redlock-clock-jump"},
		{"bad file", []string{"run", bad}, bad + ":4: ttl: expected a positive duration"},
		{"bad expect", []string{"run", "redlock-clock-jump", "--expect", "fine"}, "--expect: expected safe, unsafe, leaked or hung"},
		{"unknown flag", []string{"run", "redlock-clock-jump", "--colour"}, "flag provided but not defined: --colour"},
		{"unknown command", []string{"fly"}, `unknown command "fly"`},
		{"generator flag on a story", []string{"run", "redlock-clock-jump", "--trials", "3"}, "apply to generator scenarios"},
		{"bad trials", []string{"run", "gen-pause", "--trials", "-1"}, "--trials: expected 1 to 100000"},
		{"bad tries", []string{"sweep", "gen-pause", "--tries", "0"}, "--tries: expected 1 to 10, got 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errb := sim(t, c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, errb)
			}
			if !strings.Contains(errb, c.want) {
				t.Fatalf("stderr %q lacks %q", errb, c.want)
			}
			if strings.Count(strings.TrimSpace(errb), "\n") != 0 {
				t.Fatalf("stderr is more than one line: %q", errb)
			}
		})
	}
}

// longStory is a scenario that stays mid-story long enough to be
// interrupted.
const longStory = `name: long-story
title: holds the lock and sleeps
lock: redlock
storage: plain
expected: safe
steps:
  - do: acquire
    client: 1
  - do: write
    client: 1
  - do: clock-jump
    node: C
    by: 1s
  - do: sleep
    for: 30s
    say: sleeping
`

// markedProcs lists processes whose environment holds mark or whose
// working dir is under one of dirs (servers get an environment of their
// own, but work in the run's temp dirs).
func markedProcs(mark string, dirs ...string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		environ, _ := os.ReadFile(p)
		cmd, _ := os.ReadFile(strings.Replace(p, "environ", "cmdline", 1))
		cwd, _ := os.Readlink(strings.Replace(p, "environ", "cwd", 1))
		inDir := false
		for _, d := range dirs {
			inDir = inDir || strings.HasPrefix(cwd, d)
		}
		if bytes.Contains(environ, []byte(mark)) || inDir {
			out = append(out, filepath.Dir(p)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	sort.Strings(out)
	return out
}

// TestInterruptLeavesNothing starts sim as its own process, interrupts it
// mid-story (SIGINT, as Ctrl-C does, and SIGKILL, which it cannot catch),
// and checks that no server or client it started is left, and (after
// SIGINT) no temp dir.
func TestInterruptLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			story := filepath.Join(tmp, "long.yaml")
			os.WriteFile(story, []byte(longStory), 0o644)
			scratch := filepath.Join(tmp, "tmp")
			os.Mkdir(scratch, 0o755)
			b := make([]byte, 8)
			rand.Read(b)
			mark := "LOCKSIM_TEST_MARK=" + hex.EncodeToString(b)

			// PostgreSQL's data dir goes on /dev/shm, outside TMPDIR.
			shmBefore, _ := filepath.Glob("/dev/shm/locksim-*")
			cmd := exec.Command(os.Args[0], "run", story, "--out", filepath.Join(tmp, "run"))
			cmd.Env = append(os.Environ(), simMainEnv+"=1", "TMPDIR="+scratch, mark)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stderr)
				closed := false
				for sc.Scan() {
					if strings.Contains(sc.Text(), "sleeping") && !closed {
						close(ready)
						closed = true
					}
				}
			}()
			select {
			case <-ready:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the story never reached its sleep")
			}
			shmNow, _ := filepath.Glob("/dev/shm/locksim-*")
			dirs := append([]string{scratch}, newPaths(shmBefore, shmNow)...)
			running := markedProcs(mark, dirs...)
			if len(running) < 8 {
				t.Fatalf("expected sim, 5 redis-servers, PostgreSQL and 2 clients running, found %d:\n%s", len(running), strings.Join(running, "\n"))
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if sig == syscall.SIGINT {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
					t.Fatalf("exit after SIGINT: %v, want code %d", err, exitInterrupted)
				}
			}
			// The kernel kills the children of a killed harness
			// (Pdeathsig); give it a moment.
			deadline := time.Now().Add(5 * time.Second)
			for len(markedProcs(mark, dirs...)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if left := markedProcs(mark, dirs...); len(left) > 0 {
				t.Fatalf("left running after %v:\n%s", sig, strings.Join(left, "\n"))
			}
			if sig == syscall.SIGINT {
				if left, _ := os.ReadDir(scratch); len(left) > 0 {
					t.Fatalf("temp dirs left after SIGINT: %v", left)
				}
				for _, d := range dirs[1:] {
					if _, err := os.Stat(d); err == nil {
						t.Fatalf("PostgreSQL dir %s left after SIGINT", d)
					}
				}
				// What it had is kept: the history so far and an
				// interrupted result.
				if r := readResult(t, filepath.Join(tmp, "run")); r["verdict"] != "interrupted" {
					t.Errorf("result.json after SIGINT: verdict %v, want interrupted", r["verdict"])
				}
			} else {
				// kill -9 cannot clean up: the next start of sim does.
				clean := exec.Command(os.Args[0], "clean")
				clean.Env = append(os.Environ(), simMainEnv+"=1", "TMPDIR="+scratch)
				out, err := clean.CombinedOutput()
				if err != nil {
					t.Fatalf("sim clean: %v\n%s", err, out)
				}
				t.Logf("sim clean: %s", out)
				if left, _ := os.ReadDir(scratch); len(left) > 0 {
					t.Errorf("temp dirs left after sim clean: %v", left)
				}
				for _, d := range dirs[1:] {
					if _, err := os.Stat(d); err == nil {
						t.Errorf("PostgreSQL dir %s left after sim clean", d)
					}
				}
				if segs := sysVSegments(t, running); len(segs) > 0 {
					t.Errorf("SysV segments of the killed postmaster left after sim clean: %v", segs)
					removeSysVSegments(t, running)
				}
			}
		})
	}
}

// sysVSegments lists the SysV shared memory segments created by the
// processes listed ("/proc/PID cmdline", as markedProcs gives them).
func sysVSegments(t *testing.T, procs []string) []string {
	t.Helper()
	pids := map[string]bool{}
	for _, p := range procs {
		pids[strings.TrimPrefix(strings.Fields(p)[0], "/proc/")] = true
	}
	out, err := exec.Command("ipcs", "-m", "-p").Output()
	if err != nil {
		t.Fatalf("ipcs: %v", err)
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line) // shmid owner cpid lpid
		if len(f) == 4 && pids[f[2]] {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// removeSysVSegments removes them, so that a failed test leaves nothing.
func removeSysVSegments(t *testing.T, procs []string) {
	for _, id := range sysVSegments(t, procs) {
		if err := exec.Command("ipcrm", "-m", id).Run(); err != nil {
			t.Logf("ipcrm -m %s: %v", id, err)
		}
	}
}

// newPaths returns the paths in after that are not in before.
func newPaths(before, after []string) []string {
	seen := map[string]bool{}
	for _, p := range before {
		seen[p] = true
	}
	var out []string
	for _, p := range after {
		if !seen[p] {
			out = append(out, p)
		}
	}
	return out
}

// BenchmarkColdRunRedlockClockJump times a whole `sim run
// redlock-clock-jump` as a new process, servers included, on each backend:
// local processes and docker containers, one after the other in each
// iteration so that both see the same machine. It reports each median and
// their ratio.
func BenchmarkColdRunRedlockClockJump(b *testing.B) {
	times := map[string][]time.Duration{}
	backends := []string{"local", "docker"}
	for i := 0; i < b.N; i++ {
		for _, backend := range backends {
			cmd := exec.Command(os.Args[0], "run", "redlock-clock-jump", "-q", "--backend", backend, "--out", filepath.Join(b.TempDir(), "run"))
			cmd.Env = append(os.Environ(), simMainEnv+"=1")
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("--backend %s: %v: %s", backend, err, out)
			}
			times[backend] = append(times[backend], time.Since(start))
		}
	}
	median := func(ts []time.Duration) time.Duration {
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	local, docker := median(times["local"]), median(times["docker"])
	b.ReportMetric(float64(local.Milliseconds()), "local-median-ms/run")
	b.ReportMetric(float64(docker.Milliseconds()), "docker-median-ms/run")
	b.ReportMetric(float64(docker)/float64(local), "docker/local")
}

// TestHelpExits0: help for any command is the usage on stdout, exit 0.
func TestHelpExits0(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"check", "-h"}, {"list", "--help"}, {"help"}} {
		code, out, errb := sim(t, args...)
		if code != 0 || !strings.Contains(out, "usage:") || errb != "" {
			t.Errorf("sim %v: exit %d, stdout %.40q, stderr %q", args, code, out, errb)
		}
	}
	if code, out, _ := sim(t, "--version"); code != 0 || !strings.HasPrefix(out, "sim ") {
		t.Errorf("sim --version: exit %d, %q", code, out)
	}
}
