package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/sweep"
)

// TestSweepShardsMerge plays a small sweep whole and as two shards of the
// same seed, merges the shards, and compares. Each shard plays exactly the
// whole sweep's trials (the same seeds), but a trial's outcome depends on
// timing too (how many critical sections fit, whether the pause lands in
// one: faults_struck differed between the two in a trial run), so only the
// trials are compared exactly; the damage is compared where it does not
// depend on timing: none at 0.3 TTL, some at 3 TTLs (as TestSweepShape),
// in the whole sweep and in the merged one; and the merged counts are the
// sums of the shards' files.
func TestSweepShardsMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	tmp := t.TempDir()
	args := []string{"sweep", "gen-pause", "--param", "pause=0.3ttl..3ttl", "--points", "2", "--trials", "4",
		"--ttl", "100ms", "--duration", "120ms", "--seed", "7", "-q"}
	play := func(dir string, extra ...string) {
		t.Helper()
		code, out, errb := sim(t, append(append(args, "--out", dir), extra...)...)
		if code != 0 {
			t.Fatalf("sim %v: exit %d\nstdout: %s\nstderr: %s", extra, code, out, errb)
		}
	}
	whole, s1, s2, merged := filepath.Join(tmp, "whole"), filepath.Join(tmp, "s1"), filepath.Join(tmp, "s2"), filepath.Join(tmp, "merged")
	play(whole)
	play(s1, "--shard", "1/2")
	play(s2, "--shard", "2/2")
	code, out, errb := sim(t, "sweep", "merge", s2, s1, "--out", merged)
	if code != 0 {
		t.Fatalf("merge: exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	if !strings.Contains(out, "pause=0.3ttl") || !strings.Contains(out, "8 trials from 2 shards") {
		t.Errorf("merge printed\n%s", out)
	}
	wantRows, gotRows := readSweepCSV(t, whole), readSweepCSV(t, merged)
	shardRows := [][]sweep.Row{readSweepCSV(t, s1), readSweepCSV(t, s2)}
	if len(gotRows) != 2 || len(wantRows) != 2 {
		t.Fatalf("%d merged rows, %d whole: want 2", len(gotRows), len(wantRows))
	}
	for i, w := range wantRows {
		g := gotRows[i]
		if g.Lock != w.Lock || g.Resolved != w.Resolved || g.TTL != w.TTL || g.Trials != w.Trials || g.Trials != 4 {
			t.Errorf("row %d: merged %s %v (TTL %v), %d trials; whole %s %v (TTL %v), %d trials",
				i+1, g.Lock, g.Resolved, g.TTL, g.Trials, w.Lock, w.Resolved, w.TTL, w.Trials)
		}
		a, b := shardRows[0][i], shardRows[1][i]
		if a.Trials != 2 || b.Trials != 2 {
			t.Errorf("row %d: shards played %d and %d trials, want 2 each", i+1, a.Trials, b.Trials)
		}
		if g.Violated != a.Violated+b.Violated || g.Damaged != a.Damaged+b.Damaged || g.Violations != a.Violations+b.Violations ||
			g.CriticalSections != a.CriticalSections+b.CriticalSections || g.Injected != a.Injected+b.Injected {
			t.Errorf("row %d: merged %+v is not the sum of the shards' %+v and %+v", i+1, g, a, b)
		}
		above := i == 1
		for _, r := range []struct {
			what string
			row  sweep.Row
		}{{"whole", w}, {"merged", g}} {
			if above && r.row.Damaged == 0 || !above && r.row.Damaged != 0 {
				t.Errorf("%s sweep, pause %v: %d of %d trials damaged", r.what, r.row.Resolved, r.row.Damaged, r.row.Trials)
			}
		}
	}
	for _, p := range []string{"damage.png", "damage.svg", "violations.png", "violations.svg"} {
		if fi, err := os.Stat(filepath.Join(merged, p)); err != nil || fi.Size() == 0 {
			t.Errorf("merge wrote no %s", p)
		}
	}
	d, err := sweep.ReadDescription(filepath.Join(merged, "sweep.json"))
	if err != nil || d.Shards != 0 || d.Seed != 7 || len(d.MergedFrom) != 2 || d.MergedFrom[0] != s1 {
		t.Errorf("merged sweep.json: %+v, %v", d, err)
	}

	// Refusals: one line naming the directory, exit 2.
	otherSeed, again := filepath.Join(tmp, "other-seed"), filepath.Join(tmp, "again")
	copyShard(t, s2, otherSeed, func(d *sweep.Description) { d.Seed = 8 })
	copyShard(t, s1, again, nil)
	older := filepath.Join(tmp, "older")
	copyShard(t, s2, older, nil)
	os.Remove(filepath.Join(older, "trials.csv")) // a shard of a sim before trials.csv
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{s1}, "shard 2/2 missing: the directories given hold 1/2 in " + s1},
		{[]string{s1, otherSeed}, otherSeed + `: seed "8", but ` + s1 + ` has "7": not shards of one sweep`},
		{[]string{s1, again, s2}, again + ": shard 1/2 again (" + s1 + " is shard 1/2 too)"},
		{[]string{s1, whole}, whole + ": not a shard"},
		{[]string{s1, tmp}, tmp + ": no sweep.json"},
		{[]string{s1, older}, older + ": no trials.csv (a shard written by an older sim: play it again)"},
	} {
		code, out, errb := sim(t, append([]string{"sweep", "merge", "--out", filepath.Join(tmp, "refused")}, c.dirs...)...)
		if code != 2 || out != "" || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("sim sweep merge %v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.dirs, code, out, errb, c.want)
		}
	}
	if n := env.LiveCount(); n != 0 {
		t.Errorf("%d child processes still running after the sweeps", n)
	}
}

func readSweepCSV(t *testing.T, dir string) []sweep.Row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := sweep.ReadCSV(f)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return rows
}

// copyShard copies a shard's directory, its sweep.json changed by edit.
func copyShard(t *testing.T, from, to string, edit func(*sweep.Description)) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sweep.csv", "trials.csv"} {
		csv, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), csv, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := sweep.ReadDescription(filepath.Join(from, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&d)
	}
	b, _ := json.Marshal(d)
	if err := os.WriteFile(filepath.Join(to, "sweep.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSweepShardBadInput: --shard refused in one line, exit 2, before any
// server starts.
func TestSweepShardBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "gen-pause", "--seed", "1", "--shard", "2"}, `--shard "2": expected I/N`},
		{[]string{"sweep", "gen-pause", "--seed", "1", "--shard", "3/2"}, `--shard "3/2": expected 1 <= I <= N`},
		{[]string{"sweep", "gen-pause", "--seed", "1", "--shard", "0/2"}, `expected 1 <= I <= N`},
		{[]string{"sweep", "gen-pause", "--shard", "1/2"}, "--shard needs --seed N, the same on every shard"},
		{[]string{"sweep", "gen-pause", "--backend", "podman"}, `--backend: expected local or docker, got "podman"`},
		{[]string{"sweep", "gen-pause", "--redis-image", "redis:7", "--backend", "local"}, "they need --backend docker"},
		{[]string{"sweep", "merge"}, "sweep merge: name the shards' directories"},
		{[]string{"sweep", "merge", "/nonexistent/shard-1"}, "/nonexistent/shard-1: not a directory"},
	} {
		code, out, errb := sim(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("sim %v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errb, c.want)
		}
	}
}
