package hunt

import (
	"fmt"
	"math"
	"strings"

	"github.com/locksim/locksim/sweep"
)

// Merge joins the results of the shards of one hunt (the same lock,
// storage, faults, TTL and seed; shards 1 to N of N, each once): the
// candidates and every count of story runs add up, and the finding (its
// faults, thresholds and reproductions) is the shard's whose final
// story has the fewest faults (the earliest shard on a tie). It also
// returns the index of that shard (-1: none found).
func Merge(shards []*Result) (*Result, int, error) {
	if len(shards) == 0 {
		return nil, -1, fmt.Errorf("no shard to merge")
	}
	first := shards[0]
	sh, err := sweep.ParseShard(first.Shard)
	if err != nil {
		return nil, -1, err
	}
	n := sh.N
	seen := map[int]bool{}
	out := &Result{Lock: first.Lock, Storage: first.Storage, Faults: first.Faults, TTL: first.TTL, Seed: first.Seed,
		Shard: fmt.Sprintf("%d shard(s) of %d", len(shards), n), Shapes: first.Shapes}
	best := -1
	for i, s := range shards {
		if s.Lock != first.Lock || s.Storage != first.Storage || strings.Join(s.Faults, ",") != strings.Join(first.Faults, ",") ||
			s.TTL != first.TTL || s.Seed != first.Seed {
			return nil, -1, fmt.Errorf("shard %d (%s) is not of the same hunt as shard 1: lock, storage, faults, TTL and seed must match", i+1, s.Shard)
		}
		sh, err := sweep.ParseShard(s.Shard)
		if err != nil {
			return nil, -1, err
		}
		if sh.N != n || seen[sh.I] {
			return nil, -1, fmt.Errorf("shard %s: want each of shards 1 to %d once", s.Shard, n)
		}
		seen[sh.I] = true
		out.Candidates += s.Candidates
		out.CandidateRuns += s.CandidateRuns
		out.ShrinkRuns += s.ShrinkRuns
		out.ReproductionRuns += s.ReproductionRuns
		out.StoryRuns += s.StoryRuns
		out.Unknown += s.Unknown
		out.ServersReused += s.ServersReused
		out.Seconds = math.Max(out.Seconds, s.Seconds)
		if s.Found && (best < 0 || len(s.Final.Faults) < len(shards[best].Final.Faults)) {
			best = i
		}
	}
	if best >= 0 {
		b := shards[best]
		out.Found, out.SecondsToFind = true, b.SecondsToFind
		out.FaultsFound, out.FaultsFinal, out.Original, out.Final = b.FaultsFound, b.FaultsFinal, b.Original, b.Final
		out.Summary, out.Reproduced, out.ReproducedOf = b.Summary, b.Reproduced, b.ReproducedOf
		out.Thresholds, out.OneMinimal = b.Thresholds, b.OneMinimal
	}
	return out, best, nil
}
