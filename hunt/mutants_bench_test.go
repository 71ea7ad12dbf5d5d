package hunt

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/runner"
)

// mutants are the locks `sim locks --mutants` lists, each hunted with the
// faults, storage and clients of the story that shows it (the
// catalogue's scenario whose counterfactual it is), but not told the
// story: the hunt only counts what breaks the mutant and leaves the lock
// whose defence it breaks safe (--baseline).
var mutants = []struct {
	lock, baseline, storage string
	kinds                   []string
	clients                 int
}{
	{"postgres-shared", "postgres-session", "plain", []string{"none"}, 2},        // postgres-session.yaml
	{"postgres-xact-outside", "postgres-xact", "plain", []string{"drop"}, 2},     // postgres-xact.yaml
	{"redlock-no-validity", "redlock", "plain", []string{"latency", "pause"}, 2}, // redlock-pause-during-acquire.yaml
	{"redlock-wallclock", "redlock", "plain", []string{"clock-jump"}, 2},         // redlock-client-clock-jump-control.yaml
	{"redlock-lease-from-replies", "redlock", "plain", []string{"latency"}, 2},   // redlock-delay-during-acquire.yaml
	{"redis-plain-del", "redis", "none", []string{"none"}, 3},                    // redis-unsafe-release.yaml
	{"redis-extend-reset", "redis", "plain", []string{"pause"}, 2},               // redis-extend-expired.yaml
}

// TestMutantsAreHunted: every mutant lock is in the benchmark's list, and
// each one's hunt space is valid.
func TestMutantsAreHunted(t *testing.T) {
	for _, name := range clients.Names() {
		spec, _ := clients.Lookup(name)
		i := slices.IndexFunc(mutants, func(m struct {
			lock, baseline, storage string
			kinds                   []string
			clients                 int
		}) bool {
			return m.lock == name
		})
		if spec.Mutant != "" && i < 0 {
			t.Errorf("mutant %s is not hunted by BenchmarkHuntMutants", name)
		}
	}
	for _, m := range mutants {
		if _, err := mutantSpace(m.lock, m.baseline, m.storage, m.kinds, m.clients); err != nil {
			t.Errorf("%s: %v", m.lock, err)
		}
	}
}

func mutantSpace(lock, baseline, storage string, kinds []string, n int) (Space, error) {
	sp, err := NewSpace(lock, storage, kinds, 500*time.Millisecond, n)
	if err != nil {
		return sp, err
	}
	return sp.WithBaseline(baseline)
}

// BenchmarkHuntMutants hunts each mutant on real servers (40 candidates
// at most, then the shrink) and reports the seconds to the first finding
// and the candidates it took; a mutant not found fails it.
//
//	go test ./hunt -run '^$' -bench HuntMutants -benchtime 1x
func BenchmarkHuntMutants(b *testing.B) {
	for _, m := range mutants {
		b.Run(m.lock, func(b *testing.B) {
			sp, err := mutantSpace(m.lock, m.baseline, m.storage, m.kinds, m.clients)
			if err != nil {
				b.Fatal(err)
			}
			play, closeServers := OnServers(b.TempDir(), runner.Options{Seed: 1})
			defer closeServers()
			var find float64
			var runs int
			for i := 0; i < b.N; i++ {
				res, _, _, err := Run(context.Background(), Options{Space: sp, Seed: int64(i + 1), Runs: 40, ShrinkRuns: 30, Play: play, Say: b.Logf})
				if err != nil {
					b.Fatal(err)
				}
				if !res.Found {
					b.Fatalf("%s not found in %d candidates (%d runs)", m.lock, res.Candidates, res.CandidateRuns)
				}
				find += res.SecondsToFind
				runs += res.Candidates
				b.Logf("%s: %s", m.lock, describePlan(*res.Final, sp.TTL))
			}
			b.ReportMetric(find/float64(b.N), "s-to-find")
			b.ReportMetric(float64(runs)/float64(b.N), "candidates")
			b.ReportMetric(0, "ns/op")
		})
	}
}
