package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// anchored is a story with a pause anchored on client 1's lease check,
// in the write before it; each case of TestAnchorErrors changes one part.
const anchored = `name: t
title: a test
source: s
explain: e
lock: redlock
storage: plain
check_lease: true
expected: unsafe
counterfactual:
  change: without the pause
steps:
  - do: acquire
    client: 1
  - do: write
    client: 1
    async: true
  - do: pause
    client: 1
    for: 2s
    at: lease-checked
    cause: true
  - do: write
    client: 2
    unlocked: true
  - do: wait
    client: 1
`

// TestAnchoredPause: a write of client 1 has the pause anchored in it;
// client 2's write, and client 1's write in the counterfactual (the
// pause, its cause, left out), have none.
func TestAnchoredPause(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(anchored))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.AnchoredPause(1, 1) {
		t.Error("client 1's write (step 2) has no pause anchored in it")
	}
	if sc.AnchoredPause(3, 2) {
		t.Error("client 2's write (step 4) has a pause anchored in it")
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if cf.AnchoredPause(1, 1) {
		t.Error("the counterfactual, without the pause, still anchors one in client 1's write")
	}
}

// TestAnchorErrors: a step anchored on a lease check is refused, with
// the reason, where it cannot strike as told.
func TestAnchorErrors(t *testing.T) {
	cases := []struct{ name, old, new, want string }{
		{"unknown anchor", "at: lease-checked", "at: lease-granted", `steps[2].at: expected one of lease-checked, got "lease-granted"`},
		{"not a pause", "  - do: pause\n    client: 1\n    for: 2s\n", "  - do: clock-jump\n    client: 1\n    by: 2s\n",
			"steps[2].at: only a pause of a client is anchored on an event inside it"},
		{"no lease check", "check_lease: true\n", "", "steps[2].at: lease-checked needs check_lease: true"},
		{"a client program", "check_lease: true\n", "check_lease: true\nclient_cmd: [node, client.js]\n",
			"steps[2].at: only the harness's own worker stops itself at lease-checked"},
		{"the write not async", "    async: true\n  - do: pause", "  - do: pause",
			"the pause strikes in client 1's write in flight: the client's latest step before it must be an async write, and step 2 (a write that is not async) is not"},
		{"the write collected", "  - do: pause", "  - do: wait\n    client: 1\n  - do: pause",
			"step 3 (wait) is not"},
		{"no write before", "  - do: write\n    client: 1\n    async: true\n", "", "step 1 (acquire) is not"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := strings.Replace(anchored, c.old, c.new, 1)
			if y == anchored {
				t.Fatalf("the case changes nothing: %q not in the story", c.old)
			}
			_, err := Parse("x.yaml", []byte(y))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestAnchorNeedsTheGoWorker: a story with an anchored pause, played by a
// client program named at run time (sim run --client-cmd), is refused
// with the step, even when the program's hello covers everything else.
func TestAnchorNeedsTheGoWorker(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(anchored))
	if err != nil {
		t.Fatal(err)
	}
	p := &ClientProgram{Program: "node client.js", Protocol: 2, Locks: []string{"redlock"},
		Ops: []string{"acquire", "release", "extend", "write"}, StorageModes: []string{"plain"}, CheckLease: true}
	err = sc.ClientProgramProblem(p)
	if err == nil || !strings.Contains(err.Error(), "steps[2].at") || !strings.Contains(err.Error(), "only the harness's own worker") {
		t.Fatalf("error %v, want a refusal of steps[2].at", err)
	}
}

// TestCounterfactualNarration: the counterfactual tells each step in the
// story's words under the number the story shows it with (its cause
// steps left out), and a changed step as what it does instead.
func TestCounterfactualNarration(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(`name: t
title: a test
lock: redis
expected: unsafe
counterfactual:
  change: without the pause
steps:
  - do: acquire
    client: 1
  - do: pause
    client: 1
    for: 2s
    cause: true
    say: Client 1 stops for two seconds.
  - do: say
    say: The lease runs out.
  - do: pause
    client: 2
    for: 1s
    say: Client 2 stops for a second.
    counterfactual:
      for: 1ms
  - do: acquire
    client: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range cf.Steps {
		got = append(got, cf.Narrate(i))
	}
	want := []string{
		"step 1: client 1: acquire",
		"step 3: The lease runs out.",
		`step 4, changed to pause on client 2 (1ms) (the story: "Client 2 stops for a second.")`,
		"step 5: client 2: acquire",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the counterfactual tells:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := sc.StepNumber(3); n != 4 {
		t.Errorf("the story's own step 4 numbered %d", n)
	}
}

// TestTellerOf: a found story is named by the catalogue story whose
// faults it has and that ends as it did (the story's own lock first, the
// fewest faults beyond); a shape no story has, or only one that ends
// otherwise, is named by none.
func TestTellerOf(t *testing.T) {
	catalogue, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		found   []string
		verdict checker.Verdict
		lock    string
		want    string
	}{
		{[]string{"clock-jump node"}, checker.Unsafe, "redis", "redis-clock-jump"},
		{[]string{"clock-jump node", "partition client"}, checker.Unsafe, "redlock", "redlock-clock-jump"},
		{[]string{"drop client"}, checker.Unsafe, "postgres-session", "postgres-connection-drop"},
		{[]string{"drop client"}, checker.Unsafe, "postgres-xact", "postgres-connection-drop"}, // not postgres-xact, which ends safe
		{[]string{"crash node"}, checker.Unsafe, "memcached", "memcached-restart"},
		{[]string{"clock-jump node", "clock-jump node", "clock-jump node", "clock-jump node", "clock-jump node", "clock-jump node", "clock-jump node"}, checker.Unsafe, "redis", ""},
	} {
		if got := TellerOf(c.found, c.verdict, c.lock, catalogue); got != c.want {
			t.Errorf("%v of %s: told by %q, want %q", c.found, c.lock, got, c.want)
		}
	}
	sc, err := Find("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.FaultShape(), []string{"clock-jump node", "partition client", "partition client"}; !slices.Equal(got, want) {
		t.Errorf("redlock-clock-jump's shape: %v, want %v", got, want)
	}
}

// TestEndedSaysAWordTheStepCanClaim: for each operation a step asserts,
// every way it can end is told in one of the words its expect may say,
// and completed, failed and undecided ends are told apart.
func TestEndedSaysAWordTheStepCanClaim(t *testing.T) {
	for op, done := range map[string]string{"acquire": Granted, "write": Accepted, "release": OK, "extend": OK} {
		got := map[history.Type]string{}
		for _, typ := range []history.Type{history.Ok, history.Fail, history.Info} {
			got[typ] = Ended(op, typ)
			if !slices.Contains(expectations[op], got[typ]) {
				t.Errorf("Ended(%s, %s) = %q, which a %s step cannot claim (%v)", op, typ, got[typ], op, expectations[op])
			}
		}
		if got[history.Ok] != done || got[history.Fail] != Refused || got[history.Info] != Unknown {
			t.Errorf("%s: ok, fail, info end %q, %q, %q; want %q, refused, unknown", op, got[history.Ok], got[history.Fail], got[history.Info], done)
		}
	}
}
