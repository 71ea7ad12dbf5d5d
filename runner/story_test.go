package runner

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// TestClaimsMatchOutcomes: each fact a step states must hold, and a fact
// it does not state is not checked.
func TestClaimsMatchOutcomes(t *testing.T) {
	read0 := history.Int64(0)
	granted := history.Event{Type: history.Ok, Op: history.OpAcquire, Nodes: []string{"A", "B", "C"}, Fence: 2}
	refused := history.Event{Type: history.Fail, Op: history.OpAcquire, Reason: history.ReasonValidity, Nodes: []string{"A", "B", "C", "D", "E"}}
	write := history.Event{Type: history.Ok, Op: history.OpWrite, Read: read0}
	renewFailed := history.Event{Type: history.Note, Op: history.OpRenew, Reason: history.ReasonNotHeld}
	cases := []struct {
		st   scenarios.Step
		e    history.Event
		want bool
	}{
		{scenarios.Step{Do: "acquire", Expect: "granted"}, granted, true},
		{scenarios.Step{Do: "acquire", Expect: "granted", GrantedBy: []string{"A", "B", "C"}, Fence: 2}, granted, true},
		{scenarios.Step{Do: "acquire", Expect: "granted", GrantedBy: []string{"C", "D", "E"}}, granted, false},
		{scenarios.Step{Do: "acquire", Expect: "granted", Fence: 1}, granted, false},
		{scenarios.Step{Do: "acquire", Expect: "refused", Reason: "validity"}, refused, true},
		{scenarios.Step{Do: "acquire", Expect: "refused", Reason: "quorum"}, refused, false},
		{scenarios.Step{Do: "acquire", Expect: "granted"}, refused, false},
		{scenarios.Step{Do: "write", Expect: "accepted", Read: read0}, write, true},
		{scenarios.Step{Do: "write", Expect: "accepted", Read: history.Int64(2)}, write, false},
		{scenarios.Step{Do: "renewal", Expect: "refused"}, renewFailed, true},
		{scenarios.Step{Do: "renewal", Expect: "ok"}, renewFailed, false},
	}
	for i, c := range cases {
		if got := matches(c.st, c.e); got != c.want {
			t.Errorf("case %d: matches(%s, %s) = %v, want %v", i, claimOf(c.st), outcomeOf(c.e), got, c.want)
		}
	}
	if s := saw(refused); !strings.HasPrefix(s, "refused (validity), granted by A,B,C,D,E") {
		t.Errorf("saw = %q", s)
	}
}
