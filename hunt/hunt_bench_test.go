package hunt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locksim/locksim/runner"
)

// BenchmarkHunt measures a hunt on real servers: single-node Redis with
// plain storage under pauses, a 300ms TTL, the search only (no shrink):
// candidate story runs per second and the seconds to the first finding,
// with the servers kept between runs (as sim hunt plays) and, for the
// ratio, started afresh for each run.
//
//	go test ./hunt -run '^$' -bench Hunt -benchtime 3x
func BenchmarkHunt(b *testing.B) {
	b.Run("kept", func(b *testing.B) {
		play, closeServers := OnServers(b.TempDir(), runner.Options{Seed: 1})
		defer closeServers()
		benchHunt(b, play)
	})
	b.Run("fresh", func(b *testing.B) {
		dir := b.TempDir()
		benchHunt(b, func(ctx context.Context, s *Story) (Played, error) {
			out, err := runner.Run(ctx, s.Scenario, runner.Options{Seed: 1, Out: filepath.Join(dir, "run")})
			if err != nil {
				return Played{}, err
			}
			return Played{Verdict: out.Check.Verdict}, os.RemoveAll(filepath.Join(dir, "run"))
		})
	})
}

func benchHunt(b *testing.B, play Player) {
	sp, err := NewSpace("redis", "plain", []string{"pause", "latency"}, 300*time.Millisecond, 0)
	if err != nil {
		b.Fatal(err)
	}
	var runs int
	var find, total time.Duration
	for i := 0; i < b.N; i++ {
		h := &hunter{o: Options{Space: sp, Seed: int64(i + 1), Play: play}, res: &Result{}}
		h.o.Say = func(string, ...any) {}
		start := time.Now()
		found := false
		for c := 0; c < 12; c++ {
			bad, err := h.fails(context.Background(), sp.Candidate(int64(i+1), c))
			if err != nil {
				b.Fatal(err)
			}
			if bad && !found {
				find += time.Since(start)
				found = true
			}
		}
		if !found {
			b.Fatalf("seed %d: nothing found in 12 candidates", i+1)
		}
		runs += h.played
		total += time.Since(start)
	}
	b.ReportMetric(float64(runs)/total.Seconds(), "runs/s")
	b.ReportMetric(find.Seconds()/float64(b.N), "s-to-find")
	b.ReportMetric(0, "ns/op")
}
