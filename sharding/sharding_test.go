package sharding

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Shard{"1/1": {1, 1}, "2/4": {2, 4}, "4/4": {4, 4}, " 3 / 7": {3, 7}} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, msg := range map[string]string{"": "expected I/N", "2": "expected I/N", "a/b": "expected I/N", "1/2/3": "expected I/N",
		"0/3": "1 <= I <= N", "4/3": "1 <= I <= N", "1/0": "1 <= I <= N", "-1/2": "1 <= I <= N"} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): error %v, want one line with %q", s, err, msg)
		}
	}
}

// TestShardsCoverEveryTrialOnce: over N shards, every trial of every lock
// and point is played by exactly one shard, and within one lock and point
// the shards' counts differ by one at most.
func TestShardsCoverEveryTrialOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 16} {
		for _, shape := range [][3]int{{1, 1, 1}, {1, 5, 10}, {3, 2, 4}, {2, 8, 15}, {6, 3, 1}} {
			locks, points, trials := shape[0], shape[1], shape[2]
			for l := 0; l < locks; l++ {
				for p := 0; p < points; p++ {
					lo, hi := trials, 0
					for i := 1; i <= n; i++ {
						mine := 0
						for tr := 0; tr < trials; tr++ {
							if (Shard{i, n}).Plays(l, p, tr, points, trials) {
								mine++
							}
						}
						lo, hi = min(lo, mine), max(hi, mine)
					}
					if hi-lo > 1 {
						t.Errorf("N=%d, %v: lock %d point %d: shards play %d to %d trials", n, shape, l, p, lo, hi)
					}
					for tr := 0; tr < trials; tr++ {
						players := 0
						for i := 1; i <= n; i++ {
							if (Shard{i, n}).Plays(l, p, tr, points, trials) {
								players++
							}
						}
						if players != 1 {
							t.Errorf("N=%d, %v: lock %d point %d trial %d played by %d shards", n, shape, l, p, tr, players)
						}
					}
				}
			}
		}
	}
	if !(Shard{}).Plays(2, 3, 4, 5, 6) {
		t.Error("the zero Shard (the whole sweep) does not play every trial")
	}
}

// TestBalance: every item goes to one shard; the shards' totals end
// within the heaviest item of each other (the greedy's bound), where
// every Nth item does not; the split is the same each time.
func TestBalance(t *testing.T) {
	// Rows of a findings page in the order it lists them: a few long
	// ones among many short, the long ones one apart.
	w := []float64{430, 20, 390, 25, 360, 30, 290, 40, 250, 45, 240, 60, 220, 80, 210, 85, 200, 90}
	for _, n := range []int{1, 2, 3, 4} {
		of := Balance(w, n)
		total := make([]float64, n)
		for i, s := range of {
			if s < 0 || s >= n {
				t.Fatalf("Balance(_, %d): item %d to shard %d", n, i, s)
			}
			total[s] += w[i]
		}
		lo, hi := slices.Min(total), slices.Max(total)
		if hi-lo > slices.Max(w) {
			t.Errorf("Balance(_, %d): shard totals %v differ by more than the heaviest item", n, total)
		}
		if !slices.Equal(of, Balance(w, n)) {
			t.Errorf("Balance(_, %d) differs between two calls", n)
		}
		if n == 2 {
			nth := make([]float64, 2)
			for i := range w {
				if (Shard{1, 2}).Has(i) {
					nth[0] += w[i]
				} else {
					nth[1] += w[i]
				}
			}
			if d := math.Abs(nth[0] - nth[1]); d <= hi-lo {
				t.Errorf("every 2nd item is as even (%v) as Balance (%v): the case tests nothing", nth, total)
			}
		}
	}
	if of := Balance([]float64{5, 5, 5}, 3); !slices.Equal(of, []int{0, 1, 2}) {
		t.Errorf("equal weights: %v, want the list's order dealt 0, 1, 2", of)
	}
}
