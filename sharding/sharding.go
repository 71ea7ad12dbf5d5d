// Package sharding splits one run over N machines: shard I of N plays
// every Nth item of a list every shard numbers alike, or the items
// Balance deals it by their weights.
package sharding

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/locksim/locksim/input"
)

// The environment a shard named "auto" is read from (the CLI resolves
// it). Both indexes count from 0, as Kubernetes' does: shard I/N is
// index I-1.
const (
	// EnvJobIndex is set by Kubernetes in each pod of an Indexed Job
	// (completionMode: Indexed), 0 to completions-1.
	EnvJobIndex = "JOB_COMPLETION_INDEX"
	// EnvShardIndex is an index given explicitly, e.g. a GitHub Actions
	// matrix's ${{ strategy.job-index }}.
	EnvShardIndex = "LOCKSIM_SHARD_INDEX"
	// EnvShards is the number of shards when --shards does not give it
	// (Kubernetes does not tell a pod its Job's completions).
	EnvShards = "LOCKSIM_SHARDS"
)

// Shard is slice I of N (I from 1) of a sweep's trials, for spreading one
// sweep over N machines; the zero Shard is the whole sweep.
type Shard struct{ I, N int }

// Parse parses a shard I/N (1 <= I <= N).
func Parse(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	si, err1 := strconv.Atoi(strings.TrimSpace(i))
	sn, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, input.Errorf("shard", strconv.Quote(s), "expected I/N, e.g. 2/4 for the second of four shards")
	}
	if sn < 1 || si < 1 || si > sn {
		return Shard{}, input.Errorf("shard", strconv.Quote(s), "expected 1 <= I <= N")
	}
	return Shard{I: si, N: sn}, nil
}

// String is I/N, or "" for the whole sweep.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Plays says whether the shard plays trial t of point p of lock l, in a
// sweep of the given points and trials. Trials are numbered in the order
// a whole sweep plays them (lock, then point, then trial) and dealt out
// in turn, so every shard gets its share of every lock and point: within
// one lock and point, the shards' counts differ by one at most.
func (s Shard) Plays(l, p, t, points, trials int) bool {
	return s.Has((l*points+p)*trials + t)
}

// Has says whether the shard has item k (from 0) of a list every shard
// numbers alike: those with k mod N = I-1 (the zero Shard has them all).
func (s Shard) Has(k int) bool {
	return s.N <= 1 || k%s.N == s.I-1
}

// EachOnce checks that shards, named by names in errors, are shards 1 to
// N of one split of N, each once (their N agree: the caller checks it),
// and returns the names in shard order. kind is what the names are
// ("directories", "files").
func EachOnce(shards []Shard, names []string, kind string) ([]string, error) {
	by, missing, err := Gather(shards, names)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		n := shards[0].N
		var given []string
		for j, name := range by {
			if name != "" {
				given = append(given, fmt.Sprintf("%d/%d in %s", j+1, n, name))
			}
		}
		return nil, fmt.Errorf("shard %s missing: the %s given hold %s", missing[0], kind, strings.Join(given, ", "))
	}
	return by, nil
}

// Gather puts shards, named by names, in shard order (by[I-1] is shard
// I's name, "" where it is missing) and lists the shards of 1 to N that
// none is. A shard given twice is an error. It is EachOnce without its
// last check, for a merge that is told to accept a partial set.
func Gather(shards []Shard, names []string) (by []string, missing []Shard, err error) {
	n := shards[0].N
	by = make([]string, n)
	for k, s := range shards {
		if by[s.I-1] != "" {
			return nil, nil, fmt.Errorf("%s: shard %d/%d again (%s is shard %d/%d too)", names[k], s.I, n, by[s.I-1], s.I, n)
		}
		by[s.I-1] = names[k]
	}
	for i, name := range by {
		if name == "" {
			missing = append(missing, Shard{I: i + 1, N: n})
		}
	}
	return by, missing, nil
}

// Balance deals n items of the given weights (a row's time, say) to
// shards shards: heaviest first, each to the shard with the least weight
// so far, the lowest-numbered on a tie, the earlier item first between
// equal weights. It returns each item's shard, from 0. Every shard
// computes it alike from the same weights, and each ends within one
// item's weight of the others: what a shard of every Nth item does not
// promise when the items' weights differ tenfold.
func Balance(weights []float64, shards int) []int {
	of := make([]int, len(weights))
	if shards <= 1 {
		return of
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return weights[order[a]] > weights[order[b]] })
	load := make([]float64, shards)
	for _, i := range order {
		least := 0
		for s := range load {
			if load[s] < load[least] {
				least = s
			}
		}
		of[i] = least
		load[least] += weights[i]
	}
	return of
}
