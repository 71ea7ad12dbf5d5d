package sweep

// shard_auto.go: --shard auto, the shard named by the engine that started
// the process (a Kubernetes Indexed Job, a CI matrix).

import (
	"fmt"
	"strconv"
	"strings"
)

// The environment --shard auto reads. Both indexes count from 0, as
// Kubernetes' does: shard I/N is index I-1.
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

// AutoShard is the shard --shard auto names: the index from
// JOB_COMPLETION_INDEX or LOCKSIM_SHARD_INDEX (equal when both are set),
// the count from shards (--shards; 0: not given) or LOCKSIM_SHARDS (equal
// when both are given). lookup is os.LookupEnv in sim. A missing, malformed
// or inconsistent value is an error of one line that names it.
func AutoShard(lookup func(string) (string, bool), shards int) (Shard, error) {
	index, from := -1, ""
	for _, name := range []string{EnvJobIndex, EnvShardIndex} {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 {
			return Shard{}, fmt.Errorf("--shard auto: %s=%q: expected an index 0, 1, 2...", name, v)
		}
		if from != "" && i != index {
			return Shard{}, fmt.Errorf("--shard auto: %s=%d and %s=%d disagree: set one", from, index, name, i)
		}
		index, from = i, name
	}
	if from == "" {
		return Shard{}, fmt.Errorf("--shard auto: no shard index: %s (a Kubernetes Indexed Job's) and %s (a CI matrix's, given explicitly) are both unset", EnvJobIndex, EnvShardIndex)
	}
	n, nfrom := shards, "--shards"
	if shards < 0 {
		return Shard{}, fmt.Errorf("--shards: expected 1 or more, got %d", shards)
	}
	if v, ok := lookup(EnvShards); ok && strings.TrimSpace(v) != "" {
		e, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || e < 1 {
			return Shard{}, fmt.Errorf("--shard auto: %s=%q: expected a count 1, 2, 3...", EnvShards, v)
		}
		if n != 0 && e != n {
			return Shard{}, fmt.Errorf("--shard auto: --shards %d and %s=%d disagree", n, EnvShards, e)
		}
		n, nfrom = e, EnvShards
	}
	if n == 0 {
		return Shard{}, fmt.Errorf("--shard auto: %s=%d but no shard count: give --shards N or set %s", from, index, EnvShards)
	}
	if index >= n {
		return Shard{}, fmt.Errorf("--shard auto: %s=%d is past the last shard of %d (%s): indexes run from 0 to %d", from, index, n, nfrom, n-1)
	}
	return Shard{I: index + 1, N: n}, nil
}

// ResolveShard is the shard of --shard flag and --shards: flag "auto" reads
// the environment (AutoShard), any other value is I/N or "" (none), with
// which --shards may not be given. It returns the shard as I/N ("" for
// none), the form the rest of sim reads.
func ResolveShard(flag string, shards int, lookup func(string) (string, bool)) (string, error) {
	if flag != "auto" {
		if shards != 0 {
			return "", fmt.Errorf("--shards %d: it counts the shards of --shard auto, which is not given", shards)
		}
		return flag, nil
	}
	s, err := AutoShard(lookup, shards)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}
