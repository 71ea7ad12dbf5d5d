package cli

// recheck_test.go: a run directory checked again offline (sim check,
// sim report) gets the verdict the run recorded.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestRecheckKeepsTheMachinesUnknown: a recorded run whose verdict the
// machine took away (unknown) is unknown again when sim check and sim
// report check it offline, though its history alone checks unsafe: the
// stall, the story and the step that departed from it are kept in the run
// directory, and the verdict is decided from them as the run decided it.
func TestRecheckKeepsTheMachinesUnknown(t *testing.T) {
	events, err := history.Load(filepath.Join("..", "reports", "testdata", "redlock-clock-jump.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := checker.Check(events, checker.Options{}); err != nil || res.Verdict != checker.Unsafe {
		t.Fatalf("the recorded history checks %s (%v), want unsafe", res.Verdict, err)
	}
	told, err := scenarios.Find("redlock-clock-jump") // its steps claim what happens
	if err != nil {
		t.Fatal(err)
	}
	untold, err := scenarios.Parse("untold.yaml", []byte(`name: untold
title: two acquires, nothing claimed
lock: redlock
expected: unsafe
steps:
  - do: acquire
    client: 1
  - do: acquire
    client: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	stall := "the harness stalled 180ms around t=1.200s, more than the 100ms margin"
	departed := &runner.StoryError{File: told.File, Line: 40, Step: 4, Claimed: "client 2's acquire ends granted by C,D,E", Saw: "refused (quorum) at t=1.500s"}
	for _, c := range []struct {
		name     string
		sc       *scenarios.Scenario
		machine  history.Machine
		departed *runner.StoryError
		want     checker.Verdict
	}{
		{"a stall, nothing claimed", untold, history.Machine{MarginMS: 100, HarnessStallMS: 180, Busy: stall, Stalled: true}, nil, checker.Unknown},
		{"busy, a step not as told", told, history.Machine{MarginMS: 100, Busy: "tasks waited for a CPU 60% of the story's time"}, departed, checker.Unknown},
		{"a stall, every claim held", told, history.Machine{MarginMS: 100, HarnessStallMS: 180, Busy: stall, Stalled: true}, nil, checker.Unsafe},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := recordRun(t, c.sc, events, c.machine, c.departed)
			if got := readResult(t, dir)["verdict"]; got != string(c.want) {
				t.Fatalf("the run recorded %v, want %s", got, c.want)
			}
			recheckOffline(t, dir)
		})
	}
}

// recordRun writes a run directory as the runner and the reports do: the
// story, the history, and result.json with the verdict Judge decides.
func recordRun(t *testing.T, sc *scenarios.Scenario, events []history.Event, m history.Machine, departed *runner.StoryError) string {
	t.Helper()
	d, err := outdir.Claim(filepath.Join(t.TempDir(), "run"), outdir.Run, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.KeepStory(d, sc); err != nil {
		t.Fatal(err)
	}
	f, err := d.Create("history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Write(f, events); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := &runner.Outcome{Scenario: sc, Dir: d.Path(), Seed: 1, Expected: sc.Expected, Events: events,
		Duration: time.Second, Machine: &m, Departed: departed}
	if err := out.Recheck(); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteRunDir(out); err != nil {
		t.Fatal(err)
	}
	return d.Path()
}

// verdictLine is the verdict sim check prints.
var verdictLine = regexp.MustCompile(`(?m)^  verdict (\w+),`)

// recheckOffline checks the run directory dir again with sim check and
// sim report, and fails the test unless both give the verdict the run
// recorded in result.json, and the same summary.
func recheckOffline(t *testing.T, dir string) {
	t.Helper()
	recorded := readResult(t, dir)
	verdict, summary := recorded["verdict"], recorded["summary"]
	code, out, errb := sim(t, "check", dir)
	m := verdictLine.FindStringSubmatch(out)
	if code == exitHarness || m == nil || m[1] != verdict || strings.Contains(out, "result.json recorded") || !strings.Contains(out, summary.(string)) {
		t.Errorf("sim check %s: exit %d, recorded verdict %v (%v)\nstdout: %s\nstderr: %s", dir, code, verdict, summary, out, errb)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	code, out, errb = sim(t, "report", dir)
	if code != exitOK || strings.Contains(errb, "the stored verdict was") {
		t.Errorf("sim report %s: exit %d\nstdout: %s\nstderr: %s", dir, code, out, errb)
	}
	var again, was map[string]any
	after, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	json.Unmarshal(before, &was)
	json.Unmarshal(after, &again)
	if again["verdict"] != verdict || again["summary"] != summary || again["matches"] != was["matches"] {
		t.Errorf("sim report %s rewrote result.json with verdict %v (%v), matches %v; the run recorded %v (%v), matches %v",
			dir, again["verdict"], again["summary"], again["matches"], verdict, summary, was["matches"])
	}
}
