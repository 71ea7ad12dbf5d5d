package sharding

import (
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
