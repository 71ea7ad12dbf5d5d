package cli

// report.go: `sim report DIR` and `sim check DIR`, which work on a run
// directory offline (no server), so that a run from CI can be examined on
// a laptop.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
)

// offlineOptions are the flags of sim report and sim check.
type offlineOptions struct {
	// dir is the run directory.
	dir string
	// expect overrides result.json's expected verdict (sim check).
	expect checker.Verdict
}

func reportCmd() *cobra.Command {
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
		Args: offlineArgs("report"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdReport(offlineOptions{dir: args[0]}, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

func checkCmd() *cobra.Command {
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
		Args: offlineArgs("check"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return cmdCheck(o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar((*string)(&o.expect), "expect", "", "the verdict `V` to expect instead of result.json's: safe, unsafe, leaked or hung")
	cmd.RegisterFlagCompletionFunc("expect", completeVerdicts)
	return cmd
}

// offlineArgs are the arguments of sim report and sim check: one run
// directory.
func offlineArgs(cmd string) cobra.PositionalArgs {
	return usage(cobra.ExactArgs(1), fmt.Sprintf("usage: sim %s DIR (a run directory holding history.jsonl and result.json)", cmd))
}

// checkOffline checks the flags and the run directory of sim report and
// sim check.
func checkOffline(o offlineOptions) error {
	if err := checkExpect(o.expect); err != nil {
		return err
	}
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: not a run directory", o.dir)
	}
	if _, err := os.Stat(filepath.Join(o.dir, outdir.HistoryFile)); err != nil {
		return fmt.Errorf("%s: no history.jsonl (not a run directory?)", o.dir)
	}
	return nil
}

// recheck loads a run directory, checks its history again and decides
// its verdict as the run did (runner.Outcome.Recheck).
func recheck(dir string) (*runner.Outcome, reports.Result, error) {
	r, stored, err := reports.LoadRun(dir)
	if err != nil {
		return nil, stored, err
	}
	if err := r.Recheck(); err != nil {
		return nil, stored, err
	}
	return r, stored, nil
}

// cmdReport rebuilds every report of a run directory from its history:
// result.json (re-checked), summary.md, report.html, timeline.svg,
// junit.xml and history.html.
func cmdReport(o offlineOptions, stdout, stderr io.Writer) error {
	// The reports are rewritten only in a run directory of locksim's.
	if err := outdir.Check(o.dir, outdir.Run); err != nil {
		return err
	}
	if err := checkOffline(o); err != nil {
		return err
	}
	r, stored, err := recheck(o.dir)
	if err != nil {
		return err
	}
	if stored.Verdict != "" && stored.Verdict != r.Check.Verdict {
		fmt.Fprintf(stderr, "sim: note: the stored verdict was %s; the history checks %s now\n", stored.Verdict, r.Check.Verdict)
	}
	if err := reports.WriteRunDir(r); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n  reports rebuilt: %s\n", r.Scenario.Name, r.Check.Summary, filepath.Join(o.dir, "report.html"))
	return nil
}

// cmdCheck re-checks a run directory's history and prints the verdict; the
// exit code says whether it is the expected one (result.json's, or
// --expect).
func cmdCheck(o offlineOptions, stdout io.Writer) error {
	if err := checkOffline(o); err != nil {
		return err
	}
	r, stored, err := recheck(o.dir)
	if err != nil {
		return err
	}
	if o.expect != "" {
		r.Expected = o.expect
	}
	if r.Expected == "" {
		return fmt.Errorf("%s: result.json names no expected verdict; give --expect", o.dir)
	}
	printVerdict(stdout, r)
	if stored.Verdict != "" && stored.Verdict != r.Check.Verdict {
		fmt.Fprintf(stdout, "  (result.json recorded %s)\n", stored.Verdict)
	}
	for _, l := range reports.EvidenceLines(r.Check) {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	if !r.Matches() {
		return errMismatch
	}
	return nil
}
