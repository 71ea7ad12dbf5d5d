package main

// play.go: a run, from the runner to its run directory.

import (
	"context"
	"errors"

	"locksim/reports"
	"locksim/runner"
	"locksim/scenarios"
)

// play runs sc and writes its run directory from the runner's record. An
// interrupted run's directory says so, and its error is returned.
func play(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
	out, err := runner.Run(ctx, sc, o)
	if out == nil {
		return nil, err
	}
	werr := reports.Write(out)
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
