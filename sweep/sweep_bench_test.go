package sweep

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/scenarios"
)

// genPauseSweep is the benchmarks' sweep: gen-pause, its pause from 0.2
// to 3 TTLs.
func genPauseSweep(b *testing.B) (*scenarios.Scenario, Param) {
	b.Helper()
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		b.Fatal(err)
	}
	p, err := ParseParam("pause=0.2ttl..3ttl")
	if err != nil {
		b.Fatal(err)
	}
	return sc, p
}

// BenchmarkSweep10x30 times a whole sweep of gen-pause on single Redis:
// pause from 0.2 to 3 TTLs, 10 points x 30 trials, TTL 50ms, trials of at
// least 60ms (longer when the pause needs it), servers and client processes
// started once and reset between trials (target: 60 s or less). It reports
// the seconds for the sweep and the milliseconds a trial.
func BenchmarkSweep10x30(b *testing.B) {
	sc, p := genPauseSweep(b)
	var secs []float64
	for b.Loop() {
		start := time.Now()
		rows, err := Run(context.Background(), sc, Options{Param: &p, Points: 10, Trials: 30, Seed: 1,
			TTL: 50 * time.Millisecond, Duration: 60 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		secs = append(secs, time.Since(start).Seconds())
		if rows[0].Damaged != 0 || rows[9].Damaged == 0 {
			b.Errorf("unexpected shape: %d damaged at 0.2ttl, %d at 3ttl", rows[0].Damaged, rows[9].Damaged)
		}
	}
	b.ReportMetric(secs[len(secs)/2], "s/sweep")
	b.ReportMetric(1000*secs[len(secs)/2]/300, "ms/trial")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSweepIdleAgainstLoaded plays gen-pause's 10x30 sweep (pause
// 0.2 to 3 TTLs, TTL 100 ms, seed 1) on the machine as it is, then again
// beside a busy loop on every core, and compares them trial by trial: a
// trial decided in both must have the same verdict (a trial the load moved
// must be unknown, saying how its fault struck), and at every point the
// two counts' 95% Wilson intervals must overlap. It reports the unknown
// trials of each and the trials that went the other way.
func BenchmarkSweepIdleAgainstLoaded(b *testing.B) {
	sc, p := genPauseSweep(b)
	play := func() []Row {
		// One try: the guard's unknowns are what is measured.
		rows, err := Run(context.Background(), sc, Options{Param: &p, Points: 10, Trials: 30, Seed: 1, Tries: 1})
		if err != nil {
			b.Fatal(err)
		}
		return rows
	}
	for b.Loop() {
		idle := play()
		var hogs []*exec.Cmd
		for range runtime.NumCPU() {
			hog := exec.Command("sh", "-c", "while :; do :; done")
			if err := hog.Start(); err != nil {
				b.Fatal(err)
			}
			hogs = append(hogs, hog)
		}
		loaded := play()
		for _, h := range hogs {
			h.Process.Kill()
			h.Wait()
		}
		other, unknownIdle, unknownLoaded := 0, 0, 0
		for i := range idle {
			a, l := idle[i], loaded[i]
			unknownIdle += a.Unknown
			unknownLoaded += l.Unknown
			alo, ahi := Wilson(a.Violated, a.Decided())
			llo, lhi := Wilson(l.Violated, l.Decided())
			if ahi < llo || lhi < alo {
				b.Errorf("%s=%s: idle %d/%d, loaded %d/%d: the intervals do not overlap", a.Param, a.Value.Format(a.Param), a.Violated, a.Decided(), l.Violated, l.Decided())
			}
			for j, t := range a.Each {
				u := l.Each[j]
				if t.Verdict != checker.Unknown && u.Verdict != checker.Unknown && t.Verdict != u.Verdict {
					other++
					b.Errorf("%s=%s trial %d: %s idle, %s loaded (%s)", a.Param, a.Value.Format(a.Param), t.Number, t.Verdict, u.Verdict, u.Summary)
				}
			}
			b.Logf("%s=%s: idle %d/%d violated (%d unknown), loaded %d/%d (%d unknown)", a.Param, a.Value.Format(a.Param),
				a.Violated, a.Decided(), a.Unknown, l.Violated, l.Decided(), l.Unknown)
		}
		b.ReportMetric(float64(unknownIdle), "unknown-idle")
		b.ReportMetric(float64(unknownLoaded), "unknown-loaded")
		b.ReportMetric(float64(other), "other-verdict")
		b.ReportMetric(0, "ns/op")
	}
}
