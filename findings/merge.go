// merge.go joins the pages of a sharded sim findings (--shard I/N): each
// shard plays every Nth lock and writes its own findings.json; Merge
// checks they are the N shards of one run and joins their locks.

package findings

import (
	"fmt"

	"github.com/locksim/locksim/sharding"
)

// Merge joins the reports of the N shards of one sim findings run: the
// same seed and hunt, each shard once, no lock in two. paths name the
// reports in errors. The result has no shard and every shard's subjects.
func Merge(shards []*Report, paths []string) (*Report, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: name the shards' findings.json files")
	}
	first := shards[0]
	var split []sharding.Shard
	for k, r := range shards {
		s, err := sharding.Parse(r.Shard)
		if r.Shard == "" || err != nil {
			return nil, fmt.Errorf("%s: not a shard (no \"shard\": I/N; a whole sim findings run)", paths[k])
		}
		switch {
		case len(split) > 0 && s.N != split[0].N:
			return nil, fmt.Errorf("%s: shard %s, but %s is shard %s: not shards of one run", paths[k], r.Shard, paths[0], first.Shard)
		case r.Seed != first.Seed || r.Command != first.Command:
			return nil, fmt.Errorf("%s: %q with seed %d, but %s has %q with seed %d: not shards of one run",
				paths[k], r.Command, r.Seed, paths[0], first.Command, first.Seed)
		}
		split = append(split, s)
	}
	if _, err := sharding.EachOnce(split, paths, "files"); err != nil {
		return nil, err
	}
	out := &Report{WrittenBy: WrittenBy, Command: first.Command, Seed: first.Seed, Modules: first.Modules, Machine: first.Machine}
	owner := map[string]string{}
	for k, r := range shards {
		for _, sub := range r.Subjects {
			if other, dup := owner[sub.Name]; dup {
				return nil, fmt.Errorf("%s: %s is in %s too: not shards of one run", paths[k], sub.Name, other)
			}
			owner[sub.Name] = paths[k]
		}
		out.Replace(r.Subjects)
	}
	return out, nil
}
