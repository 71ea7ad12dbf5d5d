package runner

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/scenarios"
)

// TestJudgedAgainstReference: a lock judged against its reference matches
// when it did at least as well, never on an unknown verdict of either,
// and the sentence names the first step where the two parted.
func TestJudgedAgainstReference(t *testing.T) {
	sc := &scenarios.Scenario{Name: "s", Conditions: scenarios.Conditions{Lock: "redis-plain-del"}}
	step4 := &StoryError{Step: 4, Claimed: "client 1's release ends ok", Saw: "refused (not-held)"}
	for _, c := range []struct {
		name           string
		own, ref       checker.Verdict
		ownDep, refDep *StoryError
		matches        bool
		sentence       string
	}{
		{"worse", checker.Unsafe, checker.Safe, nil, step4, false,
			"lock redis-plain-del ended unsafe where the reference redis ended safe: a finding about redis-plain-del; at step 4 the story says client 1's release ends ok: the reference redis shows refused (not-held), lock redis-plain-del as told"},
		{"leaked is worse than safe", checker.Leaked, checker.Safe, nil, nil, false, "ended leaked where the reference redis ended safe"},
		{"as well", checker.Unsafe, checker.Unsafe, nil, nil, true, "did as well as the reference redis: both ended unsafe"},
		{"better", checker.Safe, checker.Unsafe, step4, nil, true,
			"did better than the reference redis: safe where it ended unsafe; at step 4 the story says client 1's release ends ok: lock redis-plain-del shows refused (not-held), the reference as told"},
		{"unknown decides nothing", checker.Unsafe, checker.Unknown, nil, nil, false, "undecided"},
		{"unknown own", checker.Unknown, checker.Safe, nil, nil, false, "undecided"},
	} {
		t.Run(c.name, func(t *testing.T) {
			own := &Outcome{Scenario: sc, Check: checker.Result{Verdict: c.own}, Departed: c.ownDep}
			rr := &Outcome{Scenario: &scenarios.Scenario{Conditions: scenarios.Conditions{Lock: "redis"}}, Check: checker.Result{Verdict: c.ref}, Departed: c.refDep}
			own.Reference = newReference(own, rr)
			if got := own.Matches(); got != c.matches {
				t.Errorf("Matches() = %v, want %v", got, c.matches)
			}
			if s := own.Reference.Sentence(own); !strings.Contains(s, c.sentence) {
				t.Errorf("sentence %q, want it to hold %q", s, c.sentence)
			}
		})
	}
}
