package main

// report.go: `sim report DIR` and `sim check DIR`, which work on a run
// directory offline (no server), so that a run from CI can be examined on
// a laptop.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"locksim/checker"
	"locksim/reports"
)

// offlineOptions are the flags of sim report and sim check.
type offlineOptions struct {
	// dir is the run directory.
	dir string
	// expect overrides result.json's expected verdict (sim check).
	expect string
}

func parseOffline(cmd string, args []string, withExpect bool) (offlineOptions, error) {
	var o offlineOptions
	fs := flag.NewFlagSet("sim "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if withExpect {
		fs.StringVar(&o.expect, "expect", "", "expected verdict")
	}
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return o, fmt.Errorf("sim %s: %v", cmd, err)
		}
		args = fs.Args()
		if len(args) > 0 {
			rest = append(rest, args[0])
			args = args[1:]
		}
	}
	if len(rest) != 1 {
		return o, fmt.Errorf("usage: sim %s DIR (a run directory holding history.jsonl and result.json)", cmd)
	}
	if err := checkExpect(o.expect); err != nil {
		return o, err
	}
	o.dir = rest[0]
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return o, fmt.Errorf("%s: not a run directory", o.dir)
	}
	if _, err := os.Stat(filepath.Join(o.dir, "history.jsonl")); err != nil {
		return o, fmt.Errorf("%s: no history.jsonl (not a run directory?)", o.dir)
	}
	return o, nil
}

// recheck loads a run directory and checks its history again.
func recheck(dir string) (*reports.Run, reports.Result, error) {
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
func cmdReport(args []string, stdout, stderr io.Writer) int {
	o, err := parseOffline("report", args, false)
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
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	o, err := parseOffline("check", args, true)
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
