package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
)

// BenchmarkSweep10x30 times a whole sweep of gen-pause on single Redis:
// pause from 0.2 to 3 TTLs, 10 points x 30 trials, TTL 50ms, trials of at
// least 60ms (longer when the pause needs it), servers and client processes
// started once and reset between trials (target: 60 s or less). It reports
// the seconds for the sweep and the milliseconds a trial.
func BenchmarkSweep10x30(b *testing.B) {
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		b.Fatal(err)
	}
	p, err := ParseParam("pause=0.2ttl..3ttl")
	if err != nil {
		b.Fatal(err)
	}
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
