// Package reliability holds the reliability figures (make reliability):
// benchmarks that kill runs at random moments and count what is left, and
// that play every scripted story again and again under a CPU hog and
// count the verdicts. They drive the real sim binary and real servers;
// `make test` does not run them (they take many minutes), `make bench`
// leaves them out.
package reliability

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/scenarios"
)

// build compiles bin/sim into a temp dir.
func build(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sim")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/locksim/locksim/cmd/sim").CombinedOutput()
	if err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// randN is a uniform draw from [0, n).
func randN(n int64) int64 {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		panic(err)
	}
	return v.Int64()
}

// marked lists the processes whose environment holds mark.
func marked(mark string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, _ := os.ReadFile(p)
		if bytes.Contains(env, []byte(mark)) {
			out = append(out, filepath.Dir(p))
		}
	}
	return out
}

// serversLeft says whether a process still works in a run's temp dirs.
func serversLeft(scratch string) bool {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		d, err := os.Readlink(c)
		if err == nil && (strings.HasPrefix(d, scratch+"/locksim-") || strings.HasPrefix(d, "/dev/shm/locksim-")) {
			return true
		}
	}
	return false
}

// shmEntries lists /dev/shm/locksim-* (PostgreSQL data dirs) and
// /dev/shm/PostgreSQL.* (its dynamic shared memory), and their total size.
func shmEntries() (map[string]bool, int64) {
	names := map[string]bool{}
	var size int64
	paths, _ := filepath.Glob("/dev/shm/locksim-*")
	dsm, _ := filepath.Glob("/dev/shm/PostgreSQL.*")
	paths = append(paths, dsm...)
	for _, p := range paths {
		names[p] = true
		_ = filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				size += fi.Size()
			}
			return nil
		})
	}
	return names, size
}

// orphanSegments counts SysV segments nobody is attached to whose
// creator is dead: what a killed PostgreSQL leaves.
func orphanSegments(b *testing.B) map[string]bool {
	out, err := exec.Command("ipcs", "-m", "-p").Output()
	if err != nil {
		b.Fatalf("ipcs: %v", err)
	}
	segs := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line) // shmid owner cpid lpid
		if len(f) == 4 {
			if _, err := os.Stat("/proc/" + f[2]); err != nil {
				segs[f[0]] = true
			}
		}
	}
	return segs
}

// BenchmarkKillAndReap starts b.N runs of stories with Redis and
// PostgreSQL, kills each with SIGKILL at a random moment of its first 3 s,
// then starts sim once (sim list) and reports what is left: processes,
// temp dirs, bytes in /dev/shm, SysV segments. Every figure must be 0.
func BenchmarkKillAndReap(b *testing.B) {
	bin := build(b)
	scratch := b.TempDir()
	stories := []string{"redlock-clock-jump", "postgres-connection-drop", "fenced-pause", "redlock-pause-during-acquire"}
	mk := make([]byte, 8)
	rand.Read(mk)
	mark := "LOCKSIM_RELIABILITY_MARK=" + hex.EncodeToString(mk)
	shmBefore, _ := shmEntries()
	segsBefore := orphanSegments(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "run", stories[i%len(stories)], "-q", "--out", filepath.Join(scratch, "runs", fmt.Sprint(i)))
		cmd.Env = append(os.Environ(), "TMPDIR="+scratch, mark)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Duration(randN(int64(3 * time.Second))))
		cmd.Process.Kill()
		cmd.Wait()
		// The kernel kills the children of a killed harness
		// (Pdeathsig); wait for them to go before the next kill.
		deadline := time.Now().Add(10 * time.Second)
		for len(marked(mark)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	b.StopTimer()
	// The servers of the last run go on their own (a backend notices its
	// postmaster died within a moment): wait for them, at most 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for serversLeft(scratch) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// One ordinary start.
	start := exec.Command(bin, "list")
	start.Env = append(os.Environ(), "TMPDIR="+scratch)
	out, err := start.CombinedOutput()
	if err != nil {
		b.Fatalf("sim list: %v\n%s", err, out)
	}
	// What that start removed: the proof that there was something to reap.
	var reapedDirs, reapedSegs int
	var mb float64
	if i := bytes.Index(out, []byte("removed ")); i >= 0 {
		fmt.Sscanf(string(out[i:]), "removed %d temp dir(s) (%f MB) and %d SysV segment(s)", &reapedDirs, &mb, &reapedSegs)
	}
	b.ReportMetric(float64(reapedDirs), "tempdirs-reaped")
	b.ReportMetric(float64(reapedSegs), "sysv-reaped")
	left, _ := os.ReadDir(scratch)
	var dirs []string
	for _, e := range left {
		if e.Name() != "runs" {
			dirs = append(dirs, e.Name())
		}
	}
	shmAfter, _ := shmEntries()
	var shmLeft []string
	var shmBytes int64
	for p := range shmAfter {
		if !shmBefore[p] {
			shmLeft = append(shmLeft, p)
			_ = filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					shmBytes += fi.Size()
				}
				return nil
			})
		}
	}
	segs := 0
	for id := range orphanSegments(b) {
		if !segsBefore[id] {
			segs++
		}
	}
	procs := len(marked(mark))
	b.ReportMetric(float64(procs), "procs-left")
	b.ReportMetric(float64(len(dirs)), "tempdirs-left")
	b.ReportMetric(float64(shmBytes), "shm-bytes-left")
	b.ReportMetric(float64(segs), "sysv-left")
	if procs+len(dirs)+len(shmLeft)+segs > 0 {
		b.Errorf("after %d kills and one start: %d processes, temp dirs %v, /dev/shm %v, %d SysV segments left", b.N, procs, dirs, shmLeft, segs)
	}
}

// BenchmarkCatalogueUnderLoad plays every scripted story b.N times with
// its counterfactual while a CPU hog keeps every core busy, and reports
// for each how many runs ended as told (the expected verdict, the
// counterfactual's flipped one), how many unknown (the timing guard: the
// machine was too slow), and how many in another verdict, which must be
// none.
func BenchmarkCatalogueUnderLoad(b *testing.B) {
	bin := build(b)
	all, err := scenarios.Catalogue()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < runtime.NumCPU(); i++ {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			b.Fatal(err)
		}
		defer hog.Process.Kill()
	}
	wrongTotal := 0
	for _, sc := range all {
		if sc.Generator != nil {
			continue
		}
		b.Run(sc.Name, func(b *testing.B) {
			// Each run plays the story and its counterfactual (--counterfactual):
			// each must end as told (the story's verdict, the counterfactual's
			// flipped one) or unknown, never another verdict.
			verdicts := map[checker.Verdict]int{}
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "run")
				cmd := exec.Command(bin, "run", sc.Name, "-q", "--json", "--counterfactual", "--out", out)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				stdout, err := cmd.Output()
				var res struct {
					Verdict        checker.Verdict `json:"verdict"`
					Counterfactual *struct {
						Verdict  checker.Verdict `json:"verdict"`
						Expected checker.Verdict `json:"expected"`
					} `json:"counterfactual"`
				}
				if jerr := json.Unmarshal(stdout, &res); jerr != nil || res.Verdict == "" {
					verdicts["harness failure"]++
					b.Logf("run %d: %v: %s", i, err, bytes.TrimSpace(stderr.Bytes()))
					continue
				}
				v := res.Verdict
				switch cf := res.Counterfactual; {
				case v == sc.Expected && (cf == nil || cf.Verdict == cf.Expected):
					v = "as told"
				case v == "unknown" || v == sc.Expected && cf.Verdict == "unknown":
					v = "unknown"
				default:
					if v == sc.Expected {
						v = "counterfactual " + cf.Verdict
					}
					// Keep the evidence of a wrong verdict.
					keep, _ := os.MkdirTemp("", "wrong-verdict-kept-")
					exec.Command("cp", "-a", out, keep).Run()
					b.Logf("run %d: %s (story expected %s); run directory kept in %s", i, v, sc.Expected, keep)
				}
				verdicts[v]++
			}
			wrong := b.N - verdicts["as told"] - verdicts["unknown"] - verdicts["harness failure"]
			wrongTotal += wrong
			b.ReportMetric(float64(verdicts["as told"]), "as-told")
			b.ReportMetric(float64(verdicts["unknown"]), "unknown")
			b.ReportMetric(float64(wrong), "other")
			b.ReportMetric(float64(verdicts["harness failure"]), "exit2")
			if wrong+verdicts["harness failure"] > 0 {
				b.Errorf("%s: %v in %d runs; expected %s, its counterfactual flipped", sc.Name, verdicts, b.N, sc.Expected)
			}
		})
	}
	if wrongTotal > 0 {
		b.Errorf("%d runs ended neither in the expected verdict nor unknown", wrongTotal)
	}
}
