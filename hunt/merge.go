package hunt

import (
	"fmt"
	"math"
	"strings"

	"github.com/locksim/locksim/sharding"
)

// Merge joins the results of the shards of one hunt (the same lock,
// storage, faults, TTL and seed; shards 1 to N of N, each once), named
// by names in errors: the candidates and every count of story runs add
// up, and the finding (its faults, thresholds and reproductions) is the
// shard's whose final story has the fewest faults (the earliest shard on
// a tie). A shard missing is an error unless partial is set; then the
// result lists the missing shards (Result.MissingShards). It also returns
// the index of the chosen shard (-1: none found).
func Merge(shards []*Result, names []string, partial bool) (*Result, int, error) {
	if len(shards) == 0 {
		return nil, -1, fmt.Errorf("no shard to merge")
	}
	first := shards[0]
	var split []sharding.Shard
	for i, s := range shards {
		if s.Lock != first.Lock || s.Storage != first.Storage || strings.Join(s.Faults, ",") != strings.Join(first.Faults, ",") ||
			s.TTL != first.TTL || s.Seed != first.Seed {
			return nil, -1, fmt.Errorf("%s: shard %s is not of the same hunt as %s: lock, storage, faults, TTL and seed must match", names[i], s.Shard, names[0])
		}
		sh, err := sharding.Parse(s.Shard)
		if err != nil {
			return nil, -1, fmt.Errorf("%s: %v", names[i], err)
		}
		if len(split) > 0 && sh.N != split[0].N {
			return nil, -1, fmt.Errorf("%s: shard %s, but %s is shard %s: not shards of one hunt", names[i], s.Shard, names[0], first.Shard)
		}
		split = append(split, sh)
	}
	n := split[0].N
	_, missing, err := sharding.Gather(split, names)
	if err == nil && len(missing) > 0 && !partial {
		_, err = sharding.EachOnce(split, names, "directories") // says which is missing
	}
	if err != nil {
		return nil, -1, err
	}
	out := &Result{Lock: first.Lock, Storage: first.Storage, Faults: first.Faults, TTL: first.TTL, Seed: first.Seed,
		Shard: fmt.Sprintf("%d shard(s) of %d", len(shards), n), Shapes: first.Shapes}
	for _, m := range missing {
		out.MissingShards = append(out.MissingShards, m.String())
	}
	best := -1
	for i, s := range shards {
		out.Candidates += s.Candidates
		out.CandidateRuns += s.CandidateRuns
		out.ShrinkRuns += s.ShrinkRuns
		out.ReproductionRuns += s.ReproductionRuns
		out.StoryRuns += s.StoryRuns
		out.Unknown += s.Unknown
		out.HarnessFailures += s.HarnessFailures
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
		out.Summary, out.Reproduced, out.ReproducedOf, out.OtherWay = b.Summary, b.Reproduced, b.ReproducedOf, b.OtherWay
		out.Thresholds, out.OneMinimal = b.Thresholds, b.OneMinimal
	}
	return out, best, nil
}
