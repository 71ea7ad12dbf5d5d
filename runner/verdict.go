package runner

// verdict.go: the one place a run's verdict is decided. The runner
// decides each scripted run and each generator trial with it as they end;
// sim check and sim report decide a run directory again with it
// (Outcome.Recheck), from what the directory keeps: history.jsonl, the
// story (scenario.yaml), the machine and the step that departed from the
// story (result.json). So a run re-checked offline gets the verdict it
// was given.

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// Verdict checks a played story's history and decides its verdict
// (Judge). An error is a history that breaks the recording's rules.
func Verdict(sc *scenarios.Scenario, events []history.Event, m *history.Machine, departed *StoryError) (checker.Result, error) {
	res, err := checker.Check(events, checker.Options{MaxGap: sc.MaxGap.Duration})
	if err != nil {
		return res, err
	}
	res, _ = Judge(res, sc, events, m, departed)
	return res, nil
}

// Judge decides a played story's verdict from what its checkers found in
// its history (res), how the machine behaved while it played (m: nil when
// nothing was measured) and the story: sc, and departed, the first step
// that did not happen as told (nil: none). voided says the machine's
// timing took the checkers' verdict away: the result is then unknown,
// saying why.
//
// A scripted story gets no verdict when the machine stalled past its
// margin and no step claims anything that would show the story happened
// as timed, or when the machine was busy and a step did not happen as
// told (the departure may be the machine's). A generator trial that found
// a violation gets none when the machine stalled past the trial's margin,
// or when the lock broke only where no fault struck (unattributed); and
// none, safe or not, when its fault struck off its planned size (OffPlan).
func Judge(res checker.Result, sc *scenarios.Scenario, events []history.Event, m *history.Machine, departed *StoryError) (_ checker.Result, voided bool) {
	if m == nil {
		return res, false
	}
	why, what := "", "story"
	if sc.Generator != nil {
		what = "trial"
		switch {
		case m.OffPlan != "":
			why = "the fault struck off its plan: " + m.OffPlan
		case res.Verdict == checker.Safe:
		case m.Stalled:
			why = m.Busy
		case res.Verdict == checker.Unsafe:
			why, _ = unattributed(events, res)
		}
	} else {
		told := departed != nil && m.Busy != ""
		if told || (m.Stalled && !hasClaims(sc)) {
			why = m.Busy
			if told {
				why += "; and the run did not go as told: " + departed.Error()
			}
		}
	}
	if why == "" {
		return res, false
	}
	res.Verdict = checker.Unknown
	res.Summary = "unknown: the machine was too slow for this " + what + ": " + why + "; run it again on a quieter machine"
	return res, true
}

// Recheck checks the run's history again and decides its verdict as the
// run did (Verdict): sim check and sim report.
func (o *Outcome) Recheck() error {
	res, err := Verdict(o.Scenario, o.Events, o.Machine, o.Departed)
	if err != nil {
		return err
	}
	o.Check = res
	return nil
}
