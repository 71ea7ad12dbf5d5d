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
	code, out, errOut := sim(t, "hunt", "redis", "--faults", "pause", "--runs", "3", "--ttl", "300ms", "--seed", "1", "--out", dir)
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
		{"hunt", "nolock"}, {"hunt", "redis", "--storage", "damp"}, {"hunt", "etcd", "--faults", "clock-jump"}, {"hunt"}, {"hunt", "redis", "--runs", "0"},
	} {
		code, _, errOut := sim(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "sim: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
	}
}
