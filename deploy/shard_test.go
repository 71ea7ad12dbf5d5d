package deploy

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/sweep"
)

// run starts sim as its own process with env added to this one's, and
// returns its exit code; it fails the test on any other exit than ok.
func run(t *testing.T, env []string, ok []int, args ...string) int {
	t.Helper()
	cmd := exec.Command(sim(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("sim %v: %v", args, err)
	}
	for _, c := range ok {
		if c == code {
			return code
		}
	}
	t.Fatalf("%v sim %s: exit %d, want %v\n%s", env, strings.Join(args, " "), code, ok, out)
	return code
}

// shardEnv are the variables the engine of kind gives shard i of n:
// Kubernetes' index (the count from LOCKSIM_SHARDS, as the manifests set
// it), or a matrix's index given explicitly (the count from --shards).
func shardEnv(kind string, i, n int) (env, args []string) {
	if kind == "kubernetes" {
		return []string{sweep.EnvJobIndex + "=" + strconv.Itoa(i), sweep.EnvShards + "=" + strconv.Itoa(n)}, []string{"--shard", "auto"}
	}
	return []string{sweep.EnvShardIndex + "=" + strconv.Itoa(i)}, []string{"--shard", "auto", "--shards", strconv.Itoa(n)}
}

// playShards starts sim args once per shard of n, one after the other,
// each with the variables the engine of kind gives it and --out
// dir/shard-<index>, and returns those directories.
func playShards(t *testing.T, kind string, n int, dir string, ok []int, args ...string) []string {
	t.Helper()
	var dirs []string
	for i := 0; i < n; i++ {
		env, extra := shardEnv(kind, i, n)
		d := filepath.Join(dir, "shard-"+strconv.Itoa(i))
		run(t, env, ok, append(append(slices.Clone(args), extra...), "--out", d)...)
		dirs = append(dirs, d)
	}
	return dirs
}

// seedColumns are the columns of sweep.csv that the seed decides: which
// trials are played, at which point, and whether each ended in damage or
// a violation. The others (critical sections, faults struck, violations
// per 1000 critical sections, fenced rejections) count events of a
// trial's timing, which two runs of one schedule need not repeat exactly.
var seedColumns = []string{"lock", "param", "value", "value_per_ttl", "ttl", "trials", "trials_violated", "rate",
	"rate_low95", "rate_high95", "trials_damaged", "damage_rate", "damage_low95", "damage_high95", "trials_unknown"}

// sweepCSV reads dir/sweep.csv as rows of column name to value.
func sweepCSV(t *testing.T, dir string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%s/sweep.csv: %d records, %v", dir, len(recs), err)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// TestShardAutoSweep plays a small sweep whole and as 2 shards, each
// started as its own process with the variables a Kubernetes Indexed Job
// (then a CI matrix) gives it, merges the shards with sim sweep merge, and
// requires sweep.csv to equal the whole sweep's in every column the seed
// decides (seedColumns; the rest is logged).
func TestShardAutoSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real servers")
	}
	tmp := t.TempDir()
	args := []string{"sweep", "gen-pause", "--param", "pause=0.3ttl..3ttl", "--points", "2", "--trials", "3",
		"--ttl", "300ms", "--duration", "400ms", "--seed", "7", "-q"}
	whole := filepath.Join(tmp, "whole")
	run(t, nil, []int{0}, append(args, "--out", whole)...)
	want := sweepCSV(t, whole)
	for _, kind := range []string{"kubernetes", "matrix"} {
		t.Run(kind, func(t *testing.T) {
			dirs := playShards(t, kind, 2, filepath.Join(tmp, kind), []int{0}, args...)
			merged := filepath.Join(tmp, kind, "merged")
			run(t, nil, []int{0}, append(append([]string{"sweep", "merge"}, dirs...), "--out", merged)...)
			got := sweepCSV(t, merged)
			if len(got) != len(want) {
				t.Fatalf("merged sweep.csv has %d rows, the whole sweep's %d", len(got), len(want))
			}
			for i := range want {
				for _, c := range seedColumns {
					if got[i][c] != want[i][c] {
						t.Errorf("row %d, %s: merged %q, whole %q", i+1, c, got[i][c], want[i][c])
					}
				}
				t.Logf("row %d: critical sections %s merged, %s whole; faults struck %s, %s", i+1,
					got[i]["critical_sections"], want[i]["critical_sections"], got[i]["faults_struck"], want[i]["faults_struck"])
			}
		})
	}
}

// huntResult reads dir/hunt.json.
func huntResult(t *testing.T, dir string) hunt.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "hunt.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r hunt.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShardAutoHunt plays a small hunt whole (4 candidates) and as 2 shards
// of 2 candidates each, started as an Indexed Job and a matrix start them, merges them with sim hunt merge, and
// requires the same outcome as the whole hunt: the same lock, seed and
// search, every candidate played once over the shards, and the same
// verdict (found or not).
func TestShardAutoHunt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real servers")
	}
	tmp := t.TempDir()
	args := []string{"hunt", "postgres-xact", "--storage", "none", "--faults", "pause", "--seed", "3"}
	whole := filepath.Join(tmp, "whole")
	code := run(t, nil, []int{0, 1}, append(args, "--runs", "4", "--out", whole)...)
	want := huntResult(t, whole)
	for _, kind := range []string{"kubernetes", "matrix"} {
		t.Run(kind, func(t *testing.T) {
			// --runs bounds each shard's candidates: 2 each are the
			// whole hunt's 4, dealt out in turn.
			dirs := playShards(t, kind, 2, filepath.Join(tmp, kind), []int{0, 1}, append(args, "--runs", "2")...)
			for i, dir := range dirs {
				if r := huntResult(t, dir); r.Shard != strconv.Itoa(i+1)+"/2" {
					t.Errorf("%s: shard %q, want %d/2", dir, r.Shard, i+1)
				}
			}
			merged := filepath.Join(tmp, kind, "merged")
			if c := run(t, nil, []int{0, 1}, append(append([]string{"hunt", "merge"}, dirs...), "--out", merged)...); c != code {
				t.Errorf("sim hunt merge exit %d, the whole hunt's %d", c, code)
			}
			got := huntResult(t, merged)
			if got.Found != want.Found || got.Lock != want.Lock || got.Seed != want.Seed || got.Storage != want.Storage ||
				strings.Join(got.Faults, ",") != strings.Join(want.Faults, ",") || got.TTL != want.TTL {
				t.Errorf("merged hunt %+v\nwhole hunt %+v", got, want)
			}
			if !want.Found && got.Candidates != want.Candidates {
				t.Errorf("merged hunt played %d candidates, the whole one %d", got.Candidates, want.Candidates)
			}
			t.Logf("found %v; %d candidates merged, %d whole", got.Found, got.Candidates, want.Candidates)
		})
	}
}
