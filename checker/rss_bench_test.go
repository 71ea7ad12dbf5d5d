package checker

import (
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCheck100kRSS checks a 100,000-operation history (the one
// BenchmarkCheck100k uses) and reports the seconds a check takes and the
// process's peak resident set size (getrusage ru_maxrss) afterwards: the
// harness's memory while it holds and checks such a history (targets: 1 s,
// 200 MB).
func BenchmarkCheck100kRSS(b *testing.B) {
	events := benchHistory(100_000)
	var secs []time.Duration
	for b.Loop() {
		start := time.Now()
		r := mustCheck(b, events, Options{})
		secs = append(secs, time.Since(start))
		if r.Verdict != Safe {
			b.Fatal(r.Summary)
		}
	}
	runtime.KeepAlive(events)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	slices.Sort(secs)
	b.ReportMetric(float64(ru.Maxrss)/1024, "max-rss-MB") // ru_maxrss is in KiB on Linux
	b.ReportMetric(secs[len(secs)/2].Seconds(), "s/check-median")
}

// TestMain runs the package's tests and benchmarks under the soft memory
// limit the sim binary sets (cli/main.go), so that the peak RSS a
// benchmark reports is the harness's, whichever benchmark ran first.
func TestMain(m *testing.M) {
	debug.SetMemoryLimit(MemoryLimit)
	os.Exit(m.Run())
}
