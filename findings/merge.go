// merge.go joins the pages of a sharded sim findings (--shard I/N): each
// shard plays every Nth lock and writes its own findings.json; Merge
// checks they are the N shards of one run and joins their locks.

package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/sweep"
)

// Merge joins the reports of the N shards of one sim findings run: the
// same seed and hunt, each shard once, no lock in two. paths name the
// reports in errors. The result has no shard and every shard's subjects.
func Merge(shards []*Report, paths []string) (*Report, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: name the shards' findings.json files")
	}
	first := shards[0]
	var n int
	by := map[int]string{}
	owner := map[string]string{}
	out := &Report{WrittenBy: WrittenBy, Command: first.Command, Seed: first.Seed, Modules: first.Modules, Machine: first.Machine}
	for k, r := range shards {
		s, err := sweep.ParseShard(r.Shard)
		if r.Shard == "" || err != nil {
			return nil, fmt.Errorf("%s: not a shard (no \"shard\": I/N; a whole sim findings run)", paths[k])
		}
		if k == 0 {
			n = s.N
		}
		switch {
		case s.N != n:
			return nil, fmt.Errorf("%s: shard %s, but %s is shard %s: not shards of one run", paths[k], r.Shard, paths[0], first.Shard)
		case r.Seed != first.Seed || r.Command != first.Command:
			return nil, fmt.Errorf("%s: %q with seed %d, but %s has %q with seed %d: not shards of one run",
				paths[k], r.Command, r.Seed, paths[0], first.Command, first.Seed)
		}
		if other, dup := by[s.I]; dup {
			return nil, fmt.Errorf("%s: shard %s again (%s is shard %s too)", paths[k], r.Shard, other, r.Shard)
		}
		by[s.I] = paths[k]
		for _, sub := range r.Subjects {
			if other, dup := owner[sub.Name]; dup {
				return nil, fmt.Errorf("%s: %s is in %s too: not shards of one run", paths[k], sub.Name, other)
			}
			owner[sub.Name] = paths[k]
		}
		out.Replace(r.Subjects)
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := by[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		var given []string
		for i := 1; i <= n; i++ {
			if p, ok := by[i]; ok {
				given = append(given, fmt.Sprintf("%d/%d in %s", i, n, p))
			}
		}
		slices.Sort(given)
		return nil, fmt.Errorf("shard %s missing: the files given hold %s", strings.Join(missing, ", "), strings.Join(given, ", "))
	}
	return out, nil
}
