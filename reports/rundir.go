// Package reports turns a checked run into what people and CI read:
// result.json, summary.md and porcupine's HTML visualization, all in the
// run directory next to history.jsonl.
package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"locksim/checker"
	"locksim/history"
	"locksim/scenarios"
)

// Run is one finished, checked run.
type Run struct {
	Scenario *scenarios.Scenario
	// Dir is the run directory.
	Dir string
	// Seed is the run's seed.
	Seed int64
	// Expected is the verdict the run was expected to end in.
	Expected string
	// Check is the checkers' result.
	Check checker.Result
	// Events is the history.
	Events []history.Event
	// Duration is the wall time of the whole run, servers included.
	Duration time.Duration
}

// Matches reports whether the verdict is the expected one.
func (r *Run) Matches() bool { return r.Check.Verdict == r.Expected }

// Result is the schema of result.json.
type Result struct {
	Scenario   string         `json:"scenario"`
	Title      string         `json:"title"`
	Lock       string         `json:"lock"`
	Verdict    string         `json:"verdict"`
	Expected   string         `json:"expected"`
	Matches    bool           `json:"matches"`
	Summary    string         `json:"summary"`
	Violations int            `json:"violations"`
	Seed       int64          `json:"seed"`
	DurationMS int64          `json:"duration_ms"`
	Operations int            `json:"operations"`
	Faults     int            `json:"faults"`
	Check      checker.Result `json:"check"`
}

// NewResult builds result.json's content.
func NewResult(r *Run) Result {
	res := Result{
		Scenario: r.Scenario.Name, Title: r.Scenario.Title, Lock: r.Scenario.Lock,
		Verdict: r.Check.Verdict, Expected: r.Expected, Matches: r.Matches(),
		Summary: r.Check.Summary, Violations: r.Check.Violations, Seed: r.Seed,
		DurationMS: r.Duration.Milliseconds(), Check: r.Check,
	}
	for _, e := range r.Events {
		switch e.Type {
		case history.Invoke:
			res.Operations++
		case history.Fault:
			res.Faults++
		}
	}
	return res
}

// WriteRunDir writes result.json, summary.md and history.html into r.Dir
// (history.jsonl is written while the run goes).
func WriteRunDir(r *Run) error {
	b, err := json.MarshalIndent(NewResult(r), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "result.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "summary.md"), []byte(Markdown(r)), 0o644); err != nil {
		return err
	}
	var html bytes.Buffer
	if err := checker.Visualize(r.Events, checker.Options{}, &html); err != nil {
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return os.WriteFile(filepath.Join(r.Dir, "history.html"), html.Bytes(), 0o644)
}

// Markdown is a summary of one run fit for a CI job page.
func Markdown(r *Run) string {
	var b strings.Builder
	mark := "✅"
	if !r.Matches() {
		mark = "❌"
	}
	fmt.Fprintf(&b, "# %s %s\n\n", mark, mdEscape(r.Scenario.Name))
	fmt.Fprintf(&b, "%s\n\n", mdEscape(r.Scenario.Title))
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| verdict | **%s** (expected %s) |\n", r.Check.Verdict, r.Expected)
	fmt.Fprintf(&b, "| lock | %s |\n", mdEscape(r.Scenario.Lock))
	fmt.Fprintf(&b, "| violations | %d |\n", r.Check.Violations)
	fmt.Fprintf(&b, "| seed | %d |\n", r.Seed)
	fmt.Fprintf(&b, "| duration | %v |\n\n", r.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "%s\n\n", mdEscape(r.Check.Summary))
	fmt.Fprintf(&b, "## History\n\n| t (s) | client | event | op | detail |\n|---:|---:|---|---|---|\n")
	for _, e := range r.Events {
		who := fmt.Sprint(e.Process)
		if e.Process == 0 {
			who = "harness"
		}
		fmt.Fprintf(&b, "| %.3f | %s | %s | %s | %s |\n", float64(e.Time)/1e9, who, e.Type, mdEscape(e.Op), mdEscape(EventDetail(e)))
	}
	fmt.Fprintf(&b, "\nFiles: history.jsonl (every event), result.json, history.html (porcupine's view).\n")
	return b.String()
}

// EventDetail says the interesting fields of an event in a few words.
func EventDetail(e history.Event) string {
	var parts []string
	if e.Target != "" {
		parts = append(parts, "on "+e.Target)
	}
	if len(e.Nodes) > 0 {
		parts = append(parts, "nodes "+strings.Join(e.Nodes, ","))
	}
	if e.LeaseEnd > 0 {
		parts = append(parts, fmt.Sprintf("lease until %.3fs", float64(e.LeaseEnd)/1e9))
	}
	if e.Fence != 0 {
		parts = append(parts, fmt.Sprintf("fence %d", e.Fence))
	}
	if e.Read != nil && e.Wrote != nil {
		parts = append(parts, fmt.Sprintf("read %d wrote %d", *e.Read, *e.Wrote))
	}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	return strings.Join(parts, "; ")
}

// mdEscape keeps text from a scenario or a history from being read as
// Markdown or HTML.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;", "&", "&amp;", "\n", " ", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}
