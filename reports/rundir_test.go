package reports

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestResultIsTheRecord: result.json is the runner's record with what is
// derived from it, under the names it has always had; read back (sim
// report, sim check), it keeps every field, the machine, the backend and
// the counterfactual included, and writes the same result.json again.
func TestResultIsTheRecord(t *testing.T) {
	sc, err := scenarios.Find("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	r := writeRun(t, sc, "redlock-clock-jump", "unsafe")
	r.Backend, r.Images = "docker", map[string]string{"redis": "redis:7.2-bookworm"}
	r.Machine = &history.Machine{MarginMS: 25, HarnessStallMS: 3, Busy: "client 3 did not run for 26ms"}
	r.Counterfactual = &runner.Counterfactual{Change: sc.Counterfactual.Change, Removed: sc.CounterfactualChanges(),
		Verdict: "safe", Expected: "safe", Flipped: true, Summary: "safe: no violation", Dir: filepath.Join(r.Dir, "counterfactual")}
	if err := WriteRunDir(r); err != nil {
		t.Fatal(err)
	}
	written := read(t, filepath.Join(r.Dir, "result.json"))
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(written), &keys); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"backend", "check", "clients", "counterfactual", "duration_ms", "expected", "explain", "fault", "faults", "file", "images",
		"lock", "machine", "matches", "nodes", "operations", "scenario", "seed", "source", "summary", "title", "verdict", "violations"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("result.json's fields:\n%v\nwant\n%v", got, want)
	}

	back, res, err := LoadRun(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Backend != "docker" || back.Images["redis"] == "" || back.Machine == nil || back.Machine.Busy == "" ||
		back.Counterfactual == nil || !back.Counterfactual.Flipped || back.Seed != 42 || back.Duration != r.Duration || !res.Matches {
		t.Errorf("read back: %+v", back)
	}
	back.Check = r.Check
	if err := WriteRunDir(back); err != nil {
		t.Fatal(err)
	}
	if again := read(t, filepath.Join(r.Dir, "result.json")); again != written {
		t.Errorf("result.json written again from what was read back differs:\n%s\nwas\n%s", again, written)
	}
}

// TestInterruptedResult: a run stopped before its story ended says so in
// result.json, with the history so far counted and no machine (nothing
// was measured).
func TestInterruptedResult(t *testing.T) {
	events, _ := load(t, "redlock-clock-jump")
	r := &runner.Outcome{Scenario: &scenarios.Scenario{Name: "x"}, Dir: t.TempDir(), Expected: "unsafe", Events: events[:5], Interrupted: "signal: interrupt"}
	if err := Write(r); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(read(t, filepath.Join(r.Dir, "result.json"))), &res); err != nil {
		t.Fatal(err)
	}
	if res["verdict"] != Interrupted || !strings.Contains(res["summary"].(string), "signal: interrupt") || res["faults"] == 0.0 || res["machine"] != nil {
		t.Errorf("result.json of a run interrupted: %v", res)
	}
}

// TestMaxGapIsKept: a story's max_gap goes into result.json and comes
// back with the run directory, so that sim report and sim check apply the
// same liveness bound when they check the history again.
func TestMaxGapIsKept(t *testing.T) {
	found, err := scenarios.Find("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	sc := *found
	sc.MaxGap = scenarios.Duration{Duration: 3 * time.Second}
	r := writeRun(t, &sc, "redlock-clock-jump", "unsafe")
	if !strings.Contains(read(t, filepath.Join(r.Dir, "result.json")), `"max_gap_ms": 3000`) {
		t.Errorf("result.json lacks max_gap_ms 3000:\n%s", read(t, filepath.Join(r.Dir, "result.json")))
	}
	back, _, err := LoadRun(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scenario.MaxGap.Duration != 3*time.Second {
		t.Errorf("read back, max_gap is %v, want 3s", back.Scenario.MaxGap)
	}
}
