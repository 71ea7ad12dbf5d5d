package sweep

import (
	"strings"
	"testing"
)

// TestAutoShard: --shard auto takes the index from Kubernetes' or an
// explicit matrix variable and the count from --shards or LOCKSIM_SHARDS;
// anything missing, malformed or inconsistent is one line naming it.
func TestAutoShard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		shards int
		want   Shard
		err    string // "" for no error
	}{
		{"indexed job", map[string]string{EnvJobIndex: "0"}, 4, Shard{1, 4}, ""},
		{"indexed job, count from env", map[string]string{EnvJobIndex: "3", EnvShards: "4"}, 0, Shard{4, 4}, ""},
		{"matrix", map[string]string{EnvShardIndex: "1", EnvShards: "2"}, 0, Shard{2, 2}, ""},
		{"both indexes agree", map[string]string{EnvJobIndex: "2", EnvShardIndex: "2"}, 3, Shard{3, 3}, ""},
		{"flag and env agree", map[string]string{EnvJobIndex: "1", EnvShards: "2"}, 2, Shard{2, 2}, ""},
		{"empty index is unset", map[string]string{EnvJobIndex: "", EnvShardIndex: "0"}, 1, Shard{1, 1}, ""},
		{"no index", map[string]string{EnvShards: "4"}, 0, Shard{}, "no shard index: JOB_COMPLETION_INDEX"},
		{"no count", map[string]string{EnvJobIndex: "1"}, 0, Shard{}, "JOB_COMPLETION_INDEX=1 but no shard count"},
		{"indexes disagree", map[string]string{EnvJobIndex: "1", EnvShardIndex: "2"}, 4, Shard{}, "JOB_COMPLETION_INDEX=1 and LOCKSIM_SHARD_INDEX=2 disagree"},
		{"counts disagree", map[string]string{EnvJobIndex: "1", EnvShards: "3"}, 4, Shard{}, "--shards 4 and LOCKSIM_SHARDS=3 disagree"},
		{"index past the count", map[string]string{EnvJobIndex: "4"}, 4, Shard{}, "JOB_COMPLETION_INDEX=4 is past the last shard of 4"},
		{"index not a number", map[string]string{EnvShardIndex: "two"}, 4, Shard{}, `LOCKSIM_SHARD_INDEX="two": expected an index`},
		{"negative index", map[string]string{EnvJobIndex: "-1"}, 4, Shard{}, `JOB_COMPLETION_INDEX="-1": expected an index`},
		{"zero count", map[string]string{EnvJobIndex: "0", EnvShards: "0"}, 0, Shard{}, `LOCKSIM_SHARDS="0": expected a count`},
		{"negative --shards", map[string]string{EnvJobIndex: "0"}, -2, Shard{}, "--shards: expected 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := AutoShard(lookup, tc.shards)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("AutoShard = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("AutoShard = %v, %v; want one line with %q", got, err, tc.err)
			}
		})
	}
}

// TestResolveShard: auto is resolved to I/N, I/N passes through, and
// --shards without auto is refused.
func TestResolveShard(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{EnvJobIndex: "2"}[k], k == EnvJobIndex }
	for _, tc := range []struct {
		flag   string
		shards int
		want   string
		err    string
	}{
		{"auto", 3, "3/3", ""},
		{"1/2", 0, "1/2", ""},
		{"", 0, "", ""},
		{"1/2", 2, "", "--shards 2: it counts the shards of --shard auto"},
		{"", 4, "", "--shards 4: it counts the shards of --shard auto"},
		{"auto", 2, "", "past the last shard of 2"},
	} {
		got, err := ResolveShard(tc.flag, tc.shards, env)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ResolveShard(%q, %d) = %q, %v; want %q, error %q", tc.flag, tc.shards, got, err, tc.want, tc.err)
		}
	}
}
