package deploy

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/sharding"
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
		return []string{sharding.EnvJobIndex + "=" + strconv.Itoa(i), sharding.EnvShards + "=" + strconv.Itoa(n)}, []string{"--shard", "auto"}
	}
	return []string{sharding.EnvShardIndex + "=" + strconv.Itoa(i)}, []string{"--shard", "auto", "--shards", strconv.Itoa(n)}
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

// sweepSize is the sweep TestShardAutoSweep plays, POINTSxTRIALS: 10x3 in
// make test; issue 33's target is 10x30 (go test -count=1 -run
// TestShardAutoSweep ./deploy -args -sweep 10x30).
var sweepSize = flag.String("sweep", "10x3", "the `POINTSxTRIALS` of TestShardAutoSweep's sweep")

// scheduleColumns are the columns of trials.csv that the seed decides:
// which trial is played, at which point, with which seed and schedule.
// outcomeColumns say how it ended: the same for a decided trial however
// the sweep was split, since the harness strikes each fault inside its
// critical section whatever the machine's load (runner.strike).
var (
	scheduleColumns = []string{"lock", "param", "value", "trial", "seed", "schedule"}
	outcomeColumns  = []string{"verdict", "violated", "damaged"}
)

// readCSV reads dir/name as rows of column name to value.
func readCSV(t *testing.T, dir, name string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%s/%s: %d records, %v", dir, name, len(recs), err)
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

// TestShardAutoSweep plays gen-pause's sweep (10 points from 0.2 to 3
// TTLs, its TTL of 100ms) whole and as 4 shards, each started as its own process with the
// variables a Kubernetes Indexed Job (then a CI matrix) gives it, merges
// the shards with sim sweep merge, and compares trials.csv trial by trial:
// every trial has the whole sweep's seed and schedule, and every trial
// decided in both ended the same. A trial the machine was too slow for
// (unknown) is logged, not compared: the sweep's own exit code refuses
// more than 10% of them.
func TestShardAutoSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real servers")
	}
	var points, trials int
	if _, err := fmt.Sscanf(*sweepSize, "%dx%d", &points, &trials); err != nil || points < 1 || trials < 1 {
		t.Fatalf("-sweep %q: want POINTSxTRIALS, e.g. 10x30", *sweepSize)
	}
	tmp := t.TempDir()
	args := []string{"sweep", "gen-pause", "--param", "pause=0.2ttl..3ttl", "--points", strconv.Itoa(points),
		"--trials", strconv.Itoa(trials), "--seed", "1", "-q"}
	whole := filepath.Join(tmp, "whole")
	run(t, nil, []int{0}, append(args, "--out", whole)...)
	want := readCSV(t, whole, "trials.csv")
	for _, kind := range []string{"kubernetes", "matrix"} {
		t.Run(kind, func(t *testing.T) {
			dirs := playShards(t, kind, 4, filepath.Join(tmp, kind), []int{0}, args...)
			merged := filepath.Join(tmp, kind, "merged")
			run(t, nil, []int{0}, append(append([]string{"sweep", "merge"}, dirs...), "--out", merged)...)
			got := readCSV(t, merged, "trials.csv")
			if len(got) != len(want) {
				t.Fatalf("merged trials.csv has %d trials, the whole sweep's %d", len(got), len(want))
			}
			same, differ, unknown := 0, 0, 0
			for i := range want {
				line := fmt.Sprintf("trial %s of %s at %s=%s", want[i]["trial"], want[i]["lock"], want[i]["param"], want[i]["value"])
				for _, c := range scheduleColumns {
					if got[i][c] != want[i][c] {
						t.Errorf("%s, %s: merged %q, whole %q", line, c, got[i][c], want[i][c])
					}
				}
				if got[i]["verdict"] == "unknown" || want[i]["verdict"] == "unknown" {
					unknown++
					t.Logf("%s: %s merged (%s), %s whole (%s)", line, got[i]["verdict"], got[i]["summary"], want[i]["verdict"], want[i]["summary"])
					continue
				}
				for _, c := range outcomeColumns {
					if got[i][c] != want[i][c] {
						t.Errorf("%s (%s), %s: merged %q (%s), whole %q (%s)", line, want[i]["schedule"], c,
							got[i][c], got[i]["summary"], want[i][c], want[i]["summary"])
					}
				}
				if got[i]["verdict"] == want[i]["verdict"] {
					same++
				} else {
					differ++
				}
			}
			t.Logf("%d trials: %d decided in both with the same outcome, %d with another; %d unknown in one of them",
				len(want), same, differ, unknown)
			if unknown == 0 {
				w, g := readCSV(t, whole, "sweep.csv"), readCSV(t, merged, "sweep.csv")
				for i := range w {
					for _, c := range []string{"trials", "trials_violated", "rate", "rate_low95", "rate_high95", "trials_damaged", "damage_rate"} {
						if g[i][c] != w[i][c] {
							t.Errorf("sweep.csv row %d, %s: merged %q, whole %q", i+1, c, g[i][c], w[i][c])
						}
					}
				}
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
