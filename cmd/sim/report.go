package main

// report.go: `sim report DIR` and `sim check DIR`, which work on a run
// directory offline (no server), so that a run from CI can be examined on
// a laptop.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"locksim/checker"
	"locksim/reports"
	"locksim/runner"
)

// offlineOptions are the flags of sim report and sim check.
type offlineOptions struct {
	// dir is the run directory.
	dir string
	// expect overrides result.json's expected verdict (sim check).
	expect string
}

func (c *cli) reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "rebuild a run directory's reports from its history (re-checked): report.html, timeline.svg, ...",
		Long: `Rebuild every report of a run directory from its history.jsonl, checked
again: result.json, summary.md, report.html, timeline.svg, junit.xml and
history.html. No server is started: a run from CI can be examined on a
laptop. A history that breaks the recording's rules is refused (exit 2,
naming the line and the rule).`,
		Example: "  sim report runs/redlock-clock-jump-20261129-211502.113",
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: c.do(func(_ *cobra.Command, args []string) int {
			return cmdReport(offlineOptions{}, args, c.stdout, c.stderr)
		}),
	}
}

func (c *cli) checkCmd() *cobra.Command {
	var o offlineOptions
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "re-check a run directory's history offline; exit 0 when the verdict is result.json's expected one",
		Long: `Check a run directory's history.jsonl again, offline, and print the
verdict with its evidence; exit 0 when it is the expected one (result.json's,
or --expect), 1 when it is not, 2 when the history breaks the recording's
rules (naming the line and the rule).`,
		Example: "  sim check runs/redlock-clock-jump-20261129-211502.113\n  sim check runs/x --expect safe",
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: c.do(func(_ *cobra.Command, args []string) int { return cmdCheck(o, args, c.stdout, c.stderr) }),
	}
	cmd.Flags().StringVar(&o.expect, "expect", "", "the verdict `V` to expect instead of result.json's: safe, unsafe or leaked")
	cmd.RegisterFlagCompletionFunc("expect", completeVerdicts)
	return cmd
}

// checkOffline checks the arguments of sim report and sim check.
func checkOffline(cmd string, o offlineOptions, args []string) (offlineOptions, error) {
	if len(args) != 1 {
		return o, fmt.Errorf("usage: sim %s DIR (a run directory holding history.jsonl and result.json)", cmd)
	}
	if err := checkExpect(o.expect); err != nil {
		return o, err
	}
	o.dir = args[0]
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return o, fmt.Errorf("%s: not a run directory", o.dir)
	}
	if _, err := os.Stat(filepath.Join(o.dir, "history.jsonl")); err != nil {
		return o, fmt.Errorf("%s: no history.jsonl (not a run directory?)", o.dir)
	}
	return o, nil
}

// recheck loads a run directory and checks its history again.
func recheck(dir string) (*runner.Outcome, reports.Result, error) {
	r, stored, err := reports.LoadRun(dir)
	if err != nil {
		return nil, stored, err
	}
	if r.Check, err = checker.Check(r.Events, checker.Options{}); err != nil {
		return nil, stored, err
	}
	return r, stored, nil
}

// cmdReport rebuilds every report of a run directory from its history:
// result.json (re-checked), summary.md, report.html, timeline.svg,
// junit.xml and history.html.
func cmdReport(o offlineOptions, args []string, stdout, stderr io.Writer) int {
	o, err := checkOffline("report", o, args)
	if err != nil {
		return fail(stderr, err)
	}
	r, stored, err := recheck(o.dir)
	if err != nil {
		return fail(stderr, err)
	}
	if stored.Verdict != "" && stored.Verdict != r.Check.Verdict {
		fmt.Fprintf(stderr, "sim: note: the stored verdict was %s; the history checks %s now\n", stored.Verdict, r.Check.Verdict)
	}
	if err := reports.WriteRunDir(r); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%s: %s\n  reports rebuilt: %s\n", r.Scenario.Name, r.Check.Summary, filepath.Join(o.dir, "report.html"))
	return exitOK
}

// cmdCheck re-checks a run directory's history and prints the verdict; the
// exit code says whether it is the expected one (result.json's, or
// --expect).
func cmdCheck(o offlineOptions, args []string, stdout, stderr io.Writer) int {
	o, err := checkOffline("check", o, args)
	if err != nil {
		return fail(stderr, err)
	}
	r, stored, err := recheck(o.dir)
	if err != nil {
		return fail(stderr, err)
	}
	if o.expect != "" {
		r.Expected = o.expect
	}
	if r.Expected == "" {
		return fail(stderr, fmt.Errorf("%s: result.json names no expected verdict; give --expect", o.dir))
	}
	printVerdict(stdout, r)
	if stored.Verdict != "" && stored.Verdict != r.Check.Verdict {
		fmt.Fprintf(stdout, "  (result.json recorded %s)\n", stored.Verdict)
	}
	if lines := reports.EvidenceLines(r.Check); len(lines) > 0 {
		for _, l := range lines {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
	}
	if !r.Matches() {
		return exitMismatch
	}
	return exitOK
}
