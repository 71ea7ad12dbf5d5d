package findings

import (
	"strings"
	"testing"
)

// shardReports are the pages of a findings run split in n: shard i has
// the subjects whose index mod n is i-1, of the five below.
func shardReports(n int) ([]*Report, []string) {
	names := []string{"etcd", "postgres-session", "redis", "redlock", "kazoo"}
	var reps []*Report
	var paths []string
	for i := 1; i <= n; i++ {
		r := &Report{WrittenBy: WrittenBy, Command: "bin/sim findings", Seed: 1, Shard: string(rune('0'+i)) + "/" + string(rune('0'+n))}
		for k, name := range names {
			if k%n == i-1 {
				s := Subject{Name: name, Date: "2026-12-02"}
				if name == "kazoo" {
					s.Program = []string{"examples/kazoo/client.py"}
				}
				r.Subjects = append(r.Subjects, s)
			}
		}
		reps = append(reps, r)
		paths = append(paths, "shard-"+string(rune('0'+i))+"/findings.json")
	}
	return reps, paths
}

// TestMergeJoinsTheShards: the shards' subjects, each once, locksim's
// own locks first, and no shard left on the merged page.
func TestMergeJoinsTheShards(t *testing.T) {
	reps, paths := shardReports(3)
	m, err := Merge(reps, paths)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range m.Subjects {
		got = append(got, s.Name)
	}
	if strings.Join(got, " ") != "etcd postgres-session redis redlock kazoo" || m.Shard != "" || m.Seed != 1 {
		t.Errorf("merged: subjects %v, shard %q, seed %d", got, m.Shard, m.Seed)
	}
}

// TestMergeRefusesWhatIsNotOneRun: a shard missing or given twice, a
// whole page, another seed or shard count, a lock in two shards: one
// line naming the file.
func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape func(r []*Report, p []string) ([]*Report, []string)
		want  string
	}{
		{"missing", func(r []*Report, p []string) ([]*Report, []string) { return r[:2], p[:2] }, "shard 3/3 missing: the files given hold 1/3 in shard-1/findings.json, 2/3 in shard-2/findings.json"},
		{"twice", func(r []*Report, p []string) ([]*Report, []string) {
			return append(r, r[1]), append(p, "again.json")
		}, "again.json: shard 2/3 again (shard-2/findings.json is shard 2/3 too)"},
		{"whole", func(r []*Report, p []string) ([]*Report, []string) { r[1].Shard = ""; return r, p }, "shard-2/findings.json: not a shard"},
		{"seed", func(r []*Report, p []string) ([]*Report, []string) { r[2].Seed = 2; return r, p }, "shard-3/findings.json: \"bin/sim findings\" with seed 2, but shard-1/findings.json has"},
		{"count", func(r []*Report, p []string) ([]*Report, []string) { r[1].Shard = "2/4"; return r, p }, "shard-2/findings.json: shard 2/4, but shard-1/findings.json is shard 1/3"},
		{"lock twice", func(r []*Report, p []string) ([]*Report, []string) {
			r[2].Subjects = append(r[2].Subjects, r[0].Subjects[0])
			return r, p
		}, "shard-3/findings.json: etcd is in shard-1/findings.json too"},
		{"none", func(r []*Report, p []string) ([]*Report, []string) { return nil, nil }, "name the shards' findings.json files"},
	} {
		reps, paths := shardReports(3)
		reps, paths = c.shape(reps, paths)
		_, err := Merge(reps, paths)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
}
