package cli

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/sharding"
)

// TestAutoShard: --shard auto takes the index from Kubernetes' or an
// explicit matrix variable and the count from --shards or LOCKSIM_SHARDS;
// anything missing, malformed or inconsistent is one line naming it.
func TestAutoShard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		shards int
		want   sharding.Shard
		err    string // "" for no error
	}{
		{"indexed job", map[string]string{sharding.EnvJobIndex: "0"}, 4, sharding.Shard{I: 1, N: 4}, ""},
		{"indexed job, count from env", map[string]string{sharding.EnvJobIndex: "3", sharding.EnvShards: "4"}, 0, sharding.Shard{I: 4, N: 4}, ""},
		{"matrix", map[string]string{sharding.EnvShardIndex: "1", sharding.EnvShards: "2"}, 0, sharding.Shard{I: 2, N: 2}, ""},
		{"both indexes agree", map[string]string{sharding.EnvJobIndex: "2", sharding.EnvShardIndex: "2"}, 3, sharding.Shard{I: 3, N: 3}, ""},
		{"flag and env agree", map[string]string{sharding.EnvJobIndex: "1", sharding.EnvShards: "2"}, 2, sharding.Shard{I: 2, N: 2}, ""},
		{"empty index is unset", map[string]string{sharding.EnvJobIndex: "", sharding.EnvShardIndex: "0"}, 1, sharding.Shard{I: 1, N: 1}, ""},
		{"no index", map[string]string{sharding.EnvShards: "4"}, 0, sharding.Shard{}, "no shard index: JOB_COMPLETION_INDEX"},
		{"no count", map[string]string{sharding.EnvJobIndex: "1"}, 0, sharding.Shard{}, "JOB_COMPLETION_INDEX=1 but no shard count"},
		{"indexes disagree", map[string]string{sharding.EnvJobIndex: "1", sharding.EnvShardIndex: "2"}, 4, sharding.Shard{}, "JOB_COMPLETION_INDEX=1 and LOCKSIM_SHARD_INDEX=2 disagree"},
		{"counts disagree", map[string]string{sharding.EnvJobIndex: "1", sharding.EnvShards: "3"}, 4, sharding.Shard{}, "--shards 4 and LOCKSIM_SHARDS=3 disagree"},
		{"index past the count", map[string]string{sharding.EnvJobIndex: "4"}, 4, sharding.Shard{}, "JOB_COMPLETION_INDEX=4 is past the last shard of 4"},
		{"index not a number", map[string]string{sharding.EnvShardIndex: "two"}, 4, sharding.Shard{}, `LOCKSIM_SHARD_INDEX="two": expected an index`},
		{"negative index", map[string]string{sharding.EnvJobIndex: "-1"}, 4, sharding.Shard{}, `JOB_COMPLETION_INDEX="-1": expected an index`},
		{"zero count", map[string]string{sharding.EnvJobIndex: "0", sharding.EnvShards: "0"}, 0, sharding.Shard{}, `LOCKSIM_SHARDS="0": expected a count`},
		{"negative --shards", map[string]string{sharding.EnvJobIndex: "0"}, -2, sharding.Shard{}, "--shards: expected 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := autoShard(lookup, tc.shards)
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
	env := func(k string) (string, bool) {
		return map[string]string{sharding.EnvJobIndex: "2"}[k], k == sharding.EnvJobIndex
	}
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
		got, err := resolveShard(tc.flag, tc.shards, env)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("resolveShard(%q, %d) = %q, %v; want %q, error %q", tc.flag, tc.shards, got, err, tc.want, tc.err)
		}
	}
}
