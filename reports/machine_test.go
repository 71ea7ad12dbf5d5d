package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestMachineInResult: the timing guard's readings reach result.json and
// the one line the report and summary.md show; a stall of a client paused
// by the story is not called the machine's.
func TestMachineInResult(t *testing.T) {
	m := &history.Machine{MarginMS: 25, HarnessStallMS: 3, CPUPressure: 0.42, CPUPressureKnown: true,
		ClientStalls: []history.ClientStall{{Client: 2, At: 0.1, MS: 300, Paused: true}, {Client: 3, At: 0.4, MS: 26}},
		Busy:         "client 3 did not run for 26ms"}
	r := &runner.Outcome{Scenario: &scenarios.Scenario{Name: "gen-pause"}, Machine: m}
	b, err := json.Marshal(NewResult(r))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Machine history.Machine `json:"machine"`
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Machine.CPUPressure != 0.42 || len(back.Machine.ClientStalls) != 2 || back.Machine.Busy == "" {
		t.Fatalf("result.json's machine: %+v (%v) from %s", back.Machine, err, b)
	}
	line := MachineLine(m)
	for _, want := range []string{"42% of the time", "client 3 did not run for 26ms", "margin 25ms", "too busy: client 3"} {
		if !strings.Contains(line, want) {
			t.Errorf("MachineLine = %q, lacks %q", line, want)
		}
	}
	if strings.Contains(line, "client 2") {
		t.Errorf("MachineLine = %q blames client 2, paused by the story", line)
	}
	if !strings.Contains(Markdown(r), "| machine |") {
		t.Errorf("summary.md has no machine row")
	}
}
