package runner

import (
	"fmt"
	"time"

	"locksim/checker"
	"locksim/history"
	"locksim/scenarios"
)

// Outcome is one run's record: the history, what the checkers found in
// it, and the facts of the run. The runner returns it, the reports write
// it: result.json is an Outcome with the fields derived from it
// (reports.Result embeds it), and reports.LoadRun reads one back. The
// JSON names are result.json's.
type Outcome struct {
	Scenario *scenarios.Scenario `json:"-"`
	// Dir is the run directory, holding history.jsonl and the clients' logs.
	Dir string `json:"-"`
	// Expected is the verdict the run was expected to end in.
	Expected string `json:"expected"`
	// Seed is the run's seed: every random choice flows from it.
	Seed  int64          `json:"seed"`
	Check checker.Result `json:"check"`
	// Counterfactual is the same story without its cause, when asked for.
	Counterfactual *Counterfactual `json:"counterfactual,omitempty"`
	// Backend is where the servers ran ("local" or "docker"); Images, on
	// docker, the image of each kind of server ("redis": its image).
	Backend string            `json:"backend,omitempty"`
	Images  map[string]string `json:"images,omitempty"`
	// Machine is how the machine behaved during the story (a generator
	// run: during the trial kept): stalls, CPU pressure, and why the
	// timing could not be trusted, if it could not; nil when nothing was
	// measured (a run interrupted).
	Machine *history.Machine `json:"machine,omitempty"`
	Events  []history.Event  `json:"-"`
	// Duration is the wall time of the whole run, servers included.
	Duration time.Duration `json:"-"`
	// Interrupted, when not empty, says why the run stopped before its
	// story ended: nothing was checked and Events is the history so far.
	Interrupted string `json:"-"`
}

// Matches reports whether the verdict is the expected one and, when a
// counterfactual ran, whether it flipped.
func (o *Outcome) Matches() bool {
	return o.Check.Verdict == o.Expected && (o.Counterfactual == nil || o.Counterfactual.Flipped)
}

// Counterfactual is a scenario's counterfactual run, as the run it
// belongs to records it.
type Counterfactual struct {
	// Change says what it changed ("without the clock jump on C");
	// Removed lists each step or field it removed or changed.
	Change  string   `json:"change"`
	Removed []string `json:"removed"`
	// Verdict is the counterfactual run's verdict, Expected the flipped
	// verdict it had to reach; Flipped says it did. Summary is its
	// checkers' sentence, Dir its own run directory.
	Verdict  string `json:"verdict"`
	Expected string `json:"expected"`
	Flipped  bool   `json:"flipped"`
	Summary  string `json:"summary"`
	Dir      string `json:"dir"`
	// Run is the counterfactual's own run (its Expected is the flipped
	// verdict it must reach); nil in a run read back from result.json.
	Run *Outcome `json:"-"`
}

// newCounterfactual records cr, sc's counterfactual run, for out.
func newCounterfactual(sc *scenarios.Scenario, out, cr *Outcome) *Counterfactual {
	cf := &Counterfactual{Change: sc.Counterfactual.Change, Removed: sc.CounterfactualChanges(), Run: cr}
	if cr != nil && cr.Interrupted == "" {
		cf.Verdict, cf.Expected, cf.Summary, cf.Dir = cr.Check.Verdict, cr.Expected, cr.Check.Summary, cr.Dir
		cf.Flipped = cr.Check.Verdict == cr.Expected && cr.Check.Verdict != out.Check.Verdict
	}
	return cf
}

// Sentence says the counterfactual's outcome in one line.
func (c *Counterfactual) Sentence() string {
	s := fmt.Sprintf("counterfactual, %s: %s", c.Change, c.Verdict)
	if c.Flipped {
		return s + " (the verdict flips, as it must)"
	}
	return s + fmt.Sprintf(" (NOT flipped: it had to be %s)", c.Expected)
}
