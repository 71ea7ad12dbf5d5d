// outcome.go writes a run directory from the runner's Outcome: the
// reports of a checked run (its counterfactual's first), or result.json
// and summary.md of a run interrupted.

package main

import (
	"context"
	"errors"
	"fmt"

	"locksim/reports"
	"locksim/runner"
	"locksim/scenarios"
)

// play runs sc and writes its run directory. An interrupted run's
// directory says so, and its error is returned.
func play(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*reports.Run, error) {
	out, err := runner.Run(ctx, sc, o)
	if out == nil {
		return nil, err
	}
	r, werr := writeRun(out)
	switch {
	case err != nil && werr != nil:
		return nil, errors.Join(err, werr)
	case err != nil:
		return nil, err
	}
	return r, werr
}

// writeRun writes out's run directory and returns the run as the reports
// draw it. A run whose counterfactual was interrupted is not reported:
// the counterfactual's directory says it was interrupted.
func writeRun(out *runner.Outcome) (*reports.Run, error) {
	r := &reports.Run{
		Scenario: out.Scenario, Dir: out.Dir, Seed: out.Seed, Expected: out.Expected,
		Check: out.Check, Events: out.Events, Duration: out.Duration,
		Backend: out.Backend, Images: out.Images, Machine: &out.Machine,
	}
	if out.Interrupted != "" {
		return r, reports.WriteInterrupted(r, out.Interrupted)
	}
	if cf := out.Counterfactual; cf != nil {
		cr, err := writeRun(cf.Outcome)
		if err != nil {
			return nil, fmt.Errorf("counterfactual: %w", err)
		}
		if cf.Interrupted != "" {
			return r, nil
		}
		r.Counterfactual = &reports.Counterfactual{
			Change: cf.Change, Removed: cf.Removed,
			Verdict: cr.Check.Verdict, Expected: cr.Expected,
			Flipped: cr.Check.Verdict == cr.Expected && cr.Check.Verdict != r.Check.Verdict,
			Summary: cr.Check.Summary, Dir: cr.Dir,
		}
	}
	if err := reports.WriteRunDir(r); err != nil {
		return nil, &runner.HarnessError{Err: fmt.Errorf("writing reports: %v", err)}
	}
	return r, nil
}
