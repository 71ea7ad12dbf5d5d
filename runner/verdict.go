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
	res, err := checker.Check(events, CheckOptions(sc))
	if err != nil {
		return res, err
	}
	res, _ = Judge(res, sc, events, m, departed)
	return res, nil
}

// CheckOptions are the checkers' options for a story, live and offline.
func CheckOptions(sc *scenarios.Scenario) checker.Options {
	return checker.Options{MaxGap: sc.MaxGap.Duration}
}

// Judge decides a played story's verdict from what its checkers found in
// its history (res), how the machine behaved while it played (m: nil when
// nothing was measured) and the story: sc, and departed, the first step
// that did not happen as told (nil: none). voided says the machine's
// timing took the checkers' verdict away: the result is then unknown,
// saying why.
//
// A call that never returned within its bound (hang.go) makes the run
// hung, unless it was already unsafe.
//
// A scripted story gets no verdict when the machine stalled past its
// margin and no step claims anything that would show the story happened
// as timed, or when the machine was busy and a step did not happen as
// told (the departure may be the machine's); and none when a step told to
// begin while another client's operation was in flight began after it
// had ended (Machine.Missed), in a story with no claims or one that
// departed: the race it tells never ran. A generator trial that found a
// violation gets none when the machine stalled past the trial's margin,
// or when the lock broke only where no fault struck (unattributed); and
// none, safe or not, when its fault struck off its planned size (OffPlan).
func Judge(res checker.Result, sc *scenarios.Scenario, events []history.Event, m *history.Machine, departed *StoryError) (_ checker.Result, voided bool) {
	if e, hung := Hung(events); hung && res.Verdict != checker.Unsafe {
		// Liveness: the lock kept a caller waiting past any fault.
		res.Verdict = checker.Hung
		res.Summary = "hung: " + e.Detail + " (the harness killed it and ended the story there)"
		return res, false
	}
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
		claimless := !hasClaims(sc)
		switch {
		case m.Missed != "" && (claimless || departed != nil):
			why = "its race did not run as timed: " + m.Missed
			if m.Busy != "" {
				why += "; the machine was busy: " + m.Busy
			}
			if departed != nil {
				why += "; and the run did not go as told: " + departed.Error()
			}
			return unknown(res, "unknown: this story's timing did not hold: "+why), true
		case departed != nil && m.Busy != "":
			why = m.Busy + "; and the run did not go as told: " + departed.Error()
		case m.Stalled && claimless:
			why = m.Busy
		}
	}
	if why == "" {
		return res, false
	}
	return unknown(res, "unknown: the machine was too slow for this "+what+": "+why), true
}

// unknown is res without a verdict, saying why.
func unknown(res checker.Result, why string) checker.Result {
	res.Verdict = checker.Unknown
	res.Summary = why + "; run it again on a quieter machine"
	return res
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
