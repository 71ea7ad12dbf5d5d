package cli

// shard_auto.go: --shard auto, the shard named by the engine that started
// the process (a Kubernetes Indexed Job, a CI matrix).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locksim/locksim/sharding"
)

// autoShard is the shard --shard auto names: the index from
// JOB_COMPLETION_INDEX or LOCKSIM_SHARD_INDEX (equal when both are set),
// the count from shards (--shards; 0: not given) or LOCKSIM_SHARDS (equal
// when both are given). lookup is os.LookupEnv in sim. A missing, malformed
// or inconsistent value is an error of one line that names it.
func autoShard(lookup func(string) (string, bool), shards int) (sharding.Shard, error) {
	index, from := -1, ""
	for _, name := range []string{sharding.EnvJobIndex, sharding.EnvShardIndex} {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 {
			return sharding.Shard{}, fmt.Errorf("--shard auto: %s=%q: expected an index 0, 1, 2...", name, v)
		}
		if from != "" && i != index {
			return sharding.Shard{}, fmt.Errorf("--shard auto: %s=%d and %s=%d disagree: set one", from, index, name, i)
		}
		index, from = i, name
	}
	if from == "" {
		return sharding.Shard{}, fmt.Errorf("--shard auto: no shard index: %s (a Kubernetes Indexed Job's) and %s (a CI matrix's, given explicitly) are both unset", sharding.EnvJobIndex, sharding.EnvShardIndex)
	}
	n, nfrom := shards, "--shards"
	if shards < 0 {
		return sharding.Shard{}, fmt.Errorf("--shards: expected 1 or more, got %d", shards)
	}
	if v, ok := lookup(sharding.EnvShards); ok && strings.TrimSpace(v) != "" {
		e, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || e < 1 {
			return sharding.Shard{}, fmt.Errorf("--shard auto: %s=%q: expected a count 1, 2, 3...", sharding.EnvShards, v)
		}
		if n != 0 && e != n {
			return sharding.Shard{}, fmt.Errorf("--shard auto: --shards %d and %s=%d disagree", n, sharding.EnvShards, e)
		}
		n, nfrom = e, sharding.EnvShards
	}
	if n == 0 {
		return sharding.Shard{}, fmt.Errorf("--shard auto: %s=%d but no shard count: give --shards N or set %s", from, index, sharding.EnvShards)
	}
	if index >= n {
		return sharding.Shard{}, fmt.Errorf("--shard auto: %s=%d is past the last shard of %d (%s): indexes run from 0 to %d", from, index, n, nfrom, n-1)
	}
	return sharding.Shard{I: index + 1, N: n}, nil
}

// resolveShard is the shard of --shard flag and --shards: flag "auto" reads
// the environment (autoShard), any other value is I/N or "" (none), with
// which --shards may not be given. It returns the shard as I/N ("" for
// none), the form the rest of sim reads.
func resolveShard(flag string, shards int, lookup func(string) (string, bool)) (string, error) {
	if flag != "auto" {
		if shards != 0 {
			return "", fmt.Errorf("--shards %d: it counts the shards of --shard auto, which is not given", shards)
		}
		return flag, nil
	}
	s, err := autoShard(lookup, shards)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}
