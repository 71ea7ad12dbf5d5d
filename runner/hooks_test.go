package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/locksim/locksim/scenarios"
)

// TestStepHooksAndOutcome plays redis-unsafe-release with both step hooks:
// each step is seen before and after, in order, with the history growing;
// the Outcome carries the check and the run's facts, and the runner writes
// the recording (history.jsonl) but no report.
func TestStepHooksAndOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	sc, err := scenarios.Find("redis-unsafe-release")
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	var last int
	seen := func(when string) func(context.Context, StepView) {
		return func(_ context.Context, v StepView) {
			calls = append(calls, when)
			if v.Scenario != sc || v.Step.Line != sc.Steps[v.Index].Line {
				t.Errorf("%s step %d: not the scenario's step", when, v.Index+1)
			}
			if len(v.Events) < last {
				t.Errorf("%s step %d: %d events, fewer than the %d before", when, v.Index+1, len(v.Events), last)
			}
			last = len(v.Events)
			if want := (len(calls) - 1) / 2; v.Index != want {
				t.Errorf("%s: step %d, want %d", when, v.Index+1, want+1)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, err := Run(context.Background(), sc, Options{Out: dir, BeforeStep: seen("before"), AfterStep: seen("after")})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2*len(sc.Steps) {
		t.Fatalf("%d hook calls for %d steps: %v", len(calls), len(sc.Steps), calls)
	}
	for i, c := range calls {
		if want := []string{"before", "after"}[i%2]; c != want {
			t.Fatalf("call %d is %s, want %s: %v", i+1, c, want, calls)
		}
	}
	if out.Check.Verdict == "" || out.Dir != dir || out.Expected != sc.Expected || out.Machine == nil || out.Backend == "" || len(out.Events) < last {
		t.Errorf("outcome lacks what the reports need: verdict %q, dir %q, expected %q, machine %v, backend %q, %d events",
			out.Check.Verdict, out.Dir, out.Expected, out.Machine, out.Backend, len(out.Events))
	}
	if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err != nil {
		t.Errorf("no history.jsonl: %v", err)
	}
	for _, f := range []string{"result.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the runner wrote %s: the reports are the caller's", f)
		}
	}
}
