package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"locksim/hunt"
)

// TestHuntFindsAStorySimRunPlays: sim hunt against single-node Redis
// under pauses exits 1 with a finding, and writes found.yaml, which sim
// run plays with its counterfactual flipped (exit 0), and hunt.json.
func TestHuntFindsAStorySimRunPlays(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	dir := t.TempDir()
	code, out, errOut := sim(t, "hunt", "redis", "--storage", "plain", "--faults", "pause", "--runs", "3", "--ttl", "300ms", "--seed", "1", "--out", dir)
	if code != 1 || !strings.Contains(out, "FOUND redis") {
		t.Fatalf("exit %d, want 1 with a finding; stdout %q, stderr %q", code, out, errOut)
	}
	var res hunt.Result
	b, err := os.ReadFile(filepath.Join(dir, "hunt.json"))
	if err != nil || json.Unmarshal(b, &res) != nil || !res.Found || res.Reproduced < 2 || !res.OneMinimal {
		t.Fatalf("hunt.json: %v %+v", err, res)
	}
	for _, f := range []string{"found.yaml", "original.yaml", "schema.json", "run/report.html", "run/counterfactual/result.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if code, out, errOut := sim(t, "run", filepath.Join(dir, "found.yaml"), "--counterfactual", "-q", "--out", t.TempDir()); code != 0 {
		t.Fatalf("sim run found.yaml --counterfactual: exit %d; %s %s", code, out, errOut)
	}
}

// TestHuntBadInputExits2: a lock, a storage or a fault it cannot search
// is one line and exit 2, before any server starts.
func TestHuntBadInputExits2(t *testing.T) {
	for _, args := range [][]string{
		{"hunt", "nolock"}, {"hunt", "redis", "--storage", "damp"}, {"hunt", "etcd", "--faults", "clock-drift"}, {"hunt", "redis", "--clients", "4"}, {"hunt"}, {"hunt", "redis", "--runs", "0"},
	} {
		code, _, errOut := sim(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "sim: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
	}
}

// TestHuntMerge: sim hunt merge joins the shards' hunt.json (a made-up
// hunt: no server starts), keeps the finding and exits 1; a directory
// that is not a hunt's is one line and exit 2.
func TestHuntMerge(t *testing.T) {
	var dirs []string
	for i, found := range []bool{false, true} {
		dir := t.TempDir()
		res := hunt.Result{Found: found, Lock: "redis", Storage: "plain", Faults: []string{"pause"}, TTL: "1s", Seed: 1,
			Shard: []string{"1/2", "2/2"}[i], Runs: 3, Summary: "unsafe: lost update"}
		if found {
			res.Final = &hunt.Plan{Faults: []hunt.Fault{{Kind: "pause", Client: 1, X: 1.1}}}
			for _, f := range []string{"found.yaml", "original.yaml", "schema.json"} {
				os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
			}
		}
		b, _ := json.Marshal(res)
		os.WriteFile(filepath.Join(dir, "hunt.json"), b, 0o644)
		dirs = append(dirs, dir)
	}
	out := t.TempDir()
	code, stdout, errOut := sim(t, append(append([]string{"hunt", "merge"}, dirs...), "--out", out)...)
	if code != 1 || !strings.Contains(stdout, "FOUND redis in 2 shard(s) of 2") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	var merged hunt.Result
	b, _ := os.ReadFile(filepath.Join(out, "hunt.json"))
	if json.Unmarshal(b, &merged) != nil || merged.Runs != 6 || !merged.Found {
		t.Errorf("merged hunt.json: %s", b)
	}
	if _, err := os.Stat(filepath.Join(out, "found.yaml")); err != nil {
		t.Error(err)
	}
	if code, _, errOut := sim(t, "hunt", "merge", t.TempDir()); code != 2 || !strings.Contains(errOut, "not a hunt's directory") {
		t.Errorf("an empty directory: exit %d, stderr %q", code, errOut)
	}
}
