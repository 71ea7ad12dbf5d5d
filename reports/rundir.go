// Package reports turns a checked run into what people and CI read:
// result.json, summary.md, report.html, timeline.svg, junit.xml and
// porcupine's HTML visualization, all in the run directory next to
// history.jsonl; and reads a run directory back (LoadRun) so that a run
// from CI can be re-checked and re-reported on a laptop.
package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// MachineLine says in one line how the machine behaved: the CPU pressure,
// the worst stalls of the harness and of the clients not paused by the
// story, and why the timing could not be trusted, if it could not.
func MachineLine(m *history.Machine) string {
	if m == nil {
		return ""
	}
	var parts []string
	if m.CPUPressureKnown {
		parts = append(parts, fmt.Sprintf("tasks waited for a CPU %.0f%% of the time", 100*m.CPUPressure))
	}
	parts = append(parts, fmt.Sprintf("harness's worst stall %.0fms", m.HarnessStallMS))
	worst, who := 0.0, 0
	for _, st := range m.ClientStalls {
		if !st.Paused && st.MS > worst {
			worst, who = st.MS, st.Client
		}
	}
	if who > 0 {
		parts = append(parts, fmt.Sprintf("client %d did not run for %.0fms", who, worst))
	} else {
		parts = append(parts, "no client stalled but by the story's pauses")
	}
	parts = append(parts, fmt.Sprintf("margin %.0fms", m.MarginMS))
	line := strings.Join(parts, "; ")
	if m.Busy != "" {
		line += "; too busy: " + m.Busy
	}
	return line
}

// Result is the schema of result.json: the run's record (runner.Outcome:
// expected, seed, check, counterfactual, backend, images, machine) and
// what is derived from it, for a reader who does not want to dig.
type Result struct {
	Scenario   string          `json:"scenario"`
	Title      string          `json:"title"`
	Lock       string          `json:"lock"`
	Verdict    checker.Verdict `json:"verdict"`
	Matches    bool            `json:"matches"`
	Summary    string          `json:"summary"`
	Violations int             `json:"violations"`
	DurationMS int64           `json:"duration_ms"`
	Operations int             `json:"operations"`
	Faults     int             `json:"faults"`
	runner.Outcome
	// Some facts of the story as it was played, for a reader of
	// result.json; scenario.yaml keeps the story whole, and LoadRun reads
	// that.
	Fault   string `json:"fault,omitempty"`
	Source  string `json:"source,omitempty"`
	Explain string `json:"explain,omitempty"`
	Nodes   int    `json:"nodes"`
	Clients int    `json:"clients,omitempty"`
	File    string `json:"file,omitempty"`
	// MaxGapMS is the scenario's max_gap in milliseconds (absent: none).
	MaxGapMS int64 `json:"max_gap_ms,omitempty"`
}

// NewResult builds result.json's content.
func NewResult(r *runner.Outcome) Result {
	res := Result{
		Scenario: r.Scenario.Name, Title: r.Scenario.Title, Lock: r.Scenario.Lock,
		Verdict: r.Check.Verdict, Matches: r.Matches(), Summary: r.Check.Summary, Violations: r.Check.Violations,
		DurationMS: r.Duration.Milliseconds(), Outcome: *r,
		Fault: r.Scenario.Fault, Source: r.Scenario.Source, Explain: r.Scenario.Explain,
		Nodes: r.Scenario.Nodes, Clients: r.Scenario.Clients, File: r.Scenario.File,
		MaxGapMS: r.Scenario.MaxGap.Milliseconds(),
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

// Play runs sc and writes its run directory from the runner's record: a
// run as sim run, sim hunt and sim workshop play it. An interrupted run's
// directory says so, and its error is returned.
func Play(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
	out, err := runner.Run(ctx, sc, o)
	if out == nil {
		return nil, err
	}
	werr := Write(out)
	switch {
	case err != nil && werr != nil:
		return nil, errors.Join(err, werr)
	case err != nil:
		return nil, err
	case werr != nil:
		return nil, werr
	}
	return out, nil
}

// Write writes out's run directory from the runner's record: its
// counterfactual's and its reference's first, then its own reports; a run interrupted gets a
// result.json and summary.md that say so. A run whose counterfactual was
// interrupted is not reported: the counterfactual's directory says it was
// interrupted.
func Write(out *runner.Outcome) error {
	if out.Interrupted != "" {
		return WriteInterrupted(out)
	}
	if cf := out.Counterfactual; cf != nil && cf.Run != nil {
		if err := Write(cf.Run); err != nil {
			return fmt.Errorf("counterfactual: %w", err)
		}
		if cf.Run.Interrupted != "" {
			return nil
		}
	}
	if ref := out.Reference; ref != nil && ref.Run != nil {
		if err := Write(ref.Run); err != nil {
			return fmt.Errorf("the reference: %w", err)
		}
	}
	if err := WriteRunDir(out); err != nil {
		return fmt.Errorf("writing reports: %v", err)
	}
	return nil
}

// WriteRunDir writes result.json, summary.md, report.html, timeline.svg,
// junit.xml and history.html into r.Dir (history.jsonl is written while
// the run goes). r.Check is the check of r.Events: what it derived
// (r.Check.Derived) is drawn as it is.
func WriteRunDir(r *runner.Outcome) error {
	d, err := runner.OpenRunDir(r)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(NewResult(r), "", "  ")
	if err != nil {
		return err
	}
	if err := d.WriteFile(outdir.ResultFile, append(b, '\n')); err != nil {
		return err
	}
	if err := d.WriteFile("summary.md", []byte(Markdown(r))); err != nil {
		return err
	}
	tl := NewTimeline(r.Scenario.Name+": "+r.Scenario.Title, r.Events, r.Check, LockNodes(r.Scenario), r.Scenario.Clients)
	var svg bytes.Buffer
	if err := tl.WriteSVG(&svg); err != nil {
		return err
	}
	if err := d.WriteFile("timeline.svg", svg.Bytes()); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r, tl); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	if err := d.WriteFile("report.html", page.Bytes()); err != nil {
		return err
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, []Case{{Name: r.Scenario.Name, Run: r, Duration: r.Duration}}); err != nil {
		return err
	}
	if err := d.WriteFile("junit.xml", junit.Bytes()); err != nil {
		return err
	}
	// history.html draws the linearization the check found; a Check read
	// back from result.json has none, and the history is checked for it.
	var html bytes.Buffer
	visualize := func(w io.Writer) error { return checker.Visualize(r.Events, checker.Options{}, w) }
	if d := r.Check.Derived; d != nil {
		visualize = d.Visualize
	}
	if err := visualize(&html); err != nil {
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return d.WriteFile("history.html", html.Bytes())
}

// LoadRun reads a run directory back: history.jsonl, result.json for
// the run's record (the seed, the expectation, the machine, the step that
// departed from the story...) and scenario.yaml, the story as the run
// played it. Check is the stored result; Recheck checks Events again and
// decides the verdict as the run did.
func LoadRun(dir string) (*runner.Outcome, Result, error) {
	var res Result
	b, err := os.ReadFile(filepath.Join(dir, outdir.ResultFile))
	if err != nil {
		return nil, res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, res, fmt.Errorf("%s: %v", filepath.Join(dir, outdir.ResultFile), err)
	}
	events, err := history.Load(filepath.Join(dir, outdir.HistoryFile))
	if err != nil {
		return nil, res, err
	}
	file := filepath.Join(dir, runner.StoryFile)
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, res, fmt.Errorf("%s: no %s, the story the run played: a run directory written before sim kept it; play the story again (sim run %s)", dir, runner.StoryFile, res.Scenario)
	}
	sc, err := scenarios.Parse(file, text)
	if err != nil {
		return nil, res, err
	}
	if res.File != "" {
		sc.File = res.File // where the story came from, as the run said
	}
	r := res.Outcome
	r.Scenario, r.Dir, r.Events, r.Duration = sc, dir, events, time.Duration(res.DurationMS)*time.Millisecond
	return &r, res, nil
}

// Markdown is a summary of one run fit for a CI job page.
func Markdown(r *runner.Outcome) string {
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
	fmt.Fprintf(&b, "| duration | %v |\n", r.Duration.Round(time.Millisecond))
	if m := MachineLine(r.Machine); m != "" {
		fmt.Fprintf(&b, "| machine | %s |\n", mdEscape(m))
	}
	fmt.Fprintf(&b, "\n")
	fmt.Fprintf(&b, "%s\n\n", mdEscape(r.Check.Summary))
	if c := r.Counterfactual; c != nil {
		fmt.Fprintf(&b, "**%s.** %s\n\n", mdEscape(strings.ToUpper(c.Sentence()[:1])+c.Sentence()[1:]), mdEscape(c.Summary))
	}
	if ref := r.Reference; ref != nil {
		fmt.Fprintf(&b, "**Judged against the reference %s** (its run: reference/): %s.\n\n", mdEscape(ref.Lock), mdEscape(ref.Sentence(r)))
	}
	fmt.Fprintf(&b, "## History\n\n| t (s) | client | event | op | detail |\n|---:|---:|---|---|---|\n")
	for _, e := range r.Events {
		who := fmt.Sprint(e.Process)
		if e.Process == 0 {
			who = "harness"
		}
		fmt.Fprintf(&b, "| %.3f | %s | %s | %s | %s |\n", float64(e.Time)/1e9, who, e.Type, mdEscape(e.Op), mdEscape(EventDetail(e)))
	}
	fmt.Fprintf(&b, "\nFiles: report.html (verdict, evidence, timeline), timeline.svg, history.jsonl (every event), result.json, history.html (porcupine's view).\n")
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
	if e.Reason != "" {
		parts = append(parts, "reason "+e.Reason)
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

// Interrupted is the verdict of a run stopped before its story ended.
const Interrupted = "interrupted"

// WriteInterrupted writes result.json and summary.md for a run stopped
// before its story ended (r.Interrupted says why): nothing is checked,
// the history so far (already in history.jsonl, when any) is counted, and
// the verdict is interrupted.
func WriteInterrupted(r *runner.Outcome) error {
	r.Check = checker.Result{Verdict: Interrupted, Summary: "interrupted: " + r.Interrupted + "; nothing was checked, and history.jsonl holds what happened so far"}
	d, err := runner.OpenRunDir(r)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(NewResult(r), "", "  ")
	if err != nil {
		return err
	}
	if err := d.WriteFile(outdir.ResultFile, append(b, '\n')); err != nil {
		return err
	}
	return d.WriteFile("summary.md", []byte(Markdown(r)))
}
