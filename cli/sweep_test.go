package cli

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/sweep"
)

// TestSweepShape runs `sim sweep` at a small size (the debate chart in
// miniature) and checks the CSV's shape: no damage below the threshold
// (pause = 0.3 TTL) and damage above it (3 TTLs) for single Redis; no
// damage at all with a fencing token, whose fence refuses the stale
// writes; and PostgreSQL's session lock, which has no TTL, never violated.
// The lease is 50ms, as in the debate chart. (Damaged trials at 0.3 TTL
// once moved it to 100ms: a lease holder the machine delayed past its
// lease with no fault near it, now a trial with no verdict, see
// runner.unattributed.) A sweep with more than a tenth of its trials
// unknown exits 1, and so fails here: on a machine too busy to tell.
func TestSweepShape(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	dir := t.TempDir()
	code, out, errb := sim(t, "sweep", "gen-pause", "--param", "pause=0.3ttl..3ttl", "--points", "2", "--trials", "4",
		"--locks", "redis,redis+fenced,postgres-session", "--ttl", "50ms", "--duration", "60ms", "--seed", "7", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(append(sweep.Header, sweep.SpreadHeader...), ",") {
		t.Fatalf("header %v", recs[0])
	}
	if len(recs) != 1+3*2 {
		t.Fatalf("%d rows, want 6:\n%v", len(recs)-1, recs)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(r []string, h string) int {
		n, err := strconv.Atoi(r[col[h]])
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		return n
	}
	for _, r := range recs[1:] {
		lock, perTTL := r[col["lock"]], r[col["value_per_ttl"]]
		damaged, violated, trials := num(r, "trials_damaged"), num(r, "trials_violated"), num(r, "trials")-num(r, "trials_unknown")
		above := perTTL == "3.0000"
		switch {
		case trials == 0:
			t.Errorf("%s at %s TTL: no decided trial of 4", lock, perTTL)
		case lock == "redis" && !above && damaged != 0:
			t.Errorf("redis, pause %s TTL (below the TTL): %d of 4 trials damaged, want 0", perTTL, damaged)
		case lock == "redis" && above && damaged == 0:
			t.Errorf("redis, pause %s TTL (above the TTL): no trial damaged, want some", perTTL)
		case lock == "redis+fenced" && damaged != 0:
			t.Errorf("redis+fenced, pause %s TTL: %d trials damaged, want 0: the fence refuses stale writes", perTTL, damaged)
		case lock == "redis+fenced" && above && num(r, "fenced_rejections") == 0:
			t.Errorf("redis+fenced, pause %s TTL: no write refused by the fence", perTTL)
		case lock == "postgres-session" && violated != 0:
			t.Errorf("postgres-session, pause %s TTL: %d trials violated, want 0", perTTL, violated)
		}
	}
	for _, p := range []string{"damage.png", "damage.svg", "violations.png", "violations.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Size() == 0 {
			t.Errorf("no %s", p)
		}
	}
	if n := env.LiveCount(); n != 0 {
		t.Errorf("%d child processes still running after the sweep", n)
	}
}

func TestSweepBadInputExits2WithOneLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no range", []string{"sweep", "gen-pause", "--param", "pause=1s"}, "expected a range FROM..TO"},
		{"unknown key", []string{"sweep", "gen-pause", "--param", "speed=1..2"}, `unknown key "speed"`},
		{"bad value", []string{"sweep", "gen-pause", "--param", "pause=0.2ttl..lots"}, `got "lots"`},
		{"scripted", []string{"sweep", "redlock-clock-jump", "--param", "pause=1s..2s"}, "is a scripted story"},
		{"unknown lock", []string{"sweep", "gen-pause", "--locks", "redis,chubby"}, `unknown lock "chubby"`},
		{"no name", []string{"sweep", "--param", "pause=1s..2s"}, "name one generator scenario"},
		{"bad points", []string{"sweep", "gen-pause", "--points", "0"}, "--points: expected 1 to 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errb := sim(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, errb)
			}
			if !strings.Contains(errb, tc.want) || strings.Count(errb, "\n") != 1 {
				t.Fatalf("stderr %q: want one line containing %q", errb, tc.want)
			}
		})
	}
}

// TestProgressPlainLines: off a terminal the progress display prints plain
// lines, the last with the total, each with an estimate of the time left.
func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := sweep.NewProgress(&b, "sweep x")
	p.Start(3)
	for i := 0; i < 3; i++ {
		p.Step("redis pause=1ttl")
	}
	p.Done()
	out := b.String()
	if strings.Contains(out, "\r") || !strings.Contains(out, "3/3 trials (100%)") || !strings.Contains(out, "left") {
		t.Fatalf("progress output %q", out)
	}
}

// TestSweepExitsOneWhenUndecided: more than a tenth of the trials unknown
// makes the sweep's exit code 1, with a line saying to rerun it; a tenth
// or fewer does not.
func TestSweepExitsOneWhenUndecided(t *testing.T) {
	var b bytes.Buffer
	if code := exit(&b, undecided([]sweep.Row{{Trials: 10, Unknown: 1}, {Trials: 10, Unknown: 1}})); code != exitOK || b.Len() != 0 {
		t.Fatalf("2 of 20 unknown: exit %d, %q", code, b.String())
	}
	code := exit(&b, undecided([]sweep.Row{{Trials: 10, Unknown: 3}, {Trials: 10}}))
	if line := b.String(); code != exitMismatch || !strings.HasPrefix(line, "sim: 3 of 20 trials ended unknown") || !strings.Contains(line, "quieter machine") || strings.Count(line, "\n") != 1 {
		t.Fatalf("3 of 20 unknown: exit %d, %q", code, line)
	}
	var table bytes.Buffer
	reports.SweepTable(&table, []sweep.Row{{Lock: "redis", Param: "pause", Value: sweep.Value{X: 3, RelTTL: true}, Trials: 5, Unknown: 5}})
	if !strings.Contains(table.String(), "no data") || !strings.Contains(table.String(), "5 of 5") {
		t.Fatalf("a point of unknown trials in the table:\n%s", table.String())
	}
}
