package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
)

func TestCatalogueLoads(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("catalogue has %d scenarios, want at least 2", len(all))
	}
	for _, sc := range all {
		if sc.Explain == "" || sc.Source == "" || sc.Title == "" {
			t.Errorf("%s: title, source and explain are required for the catalogue", sc.Name)
		}
		if sc.Counterfactual == nil {
			t.Errorf("%s: every catalogue scenario names its cause in a counterfactual block", sc.Name)
		}
		if strings.Contains(sc.Source, "seeds/") || !strings.Contains(sc.Source, "http") {
			t.Errorf("%s: source must cite a published text by its address, got %q", sc.Name, sc.Source)
		}
	}
}

// TestEveryMutantHasItsScenario: each deliberately broken lock is the
// counterfactual (or the subject) of a catalogue scenario, so that
// TestCatalogue proves the story catches it.
func TestEveryMutantHasItsScenario(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range clients.Names() {
		spec, _ := clients.Lookup(name)
		if spec.Mutant == "" {
			continue
		}
		var by []string
		for _, sc := range all {
			if c := sc.Counterfactual; (c != nil && c.Given("lock") && c.Lock == name && sc.Expected == "safe") ||
				(sc.Lock == name && sc.Expected == "unsafe") {
				by = append(by, sc.Name)
			}
		}
		if len(by) == 0 {
			t.Errorf("mutant %s (breaks %s) is caught by no catalogue scenario", name, spec.Mutant)
		} else {
			t.Logf("mutant %s (breaks %s) is caught by %v", name, spec.Mutant, by)
		}
	}
}

// TestCounterfactual builds a counterfactual story: cause steps out,
// changed steps in, no assertions, the flipped verdict. (A field it sets,
// with no cause step: TestCounterfactualReplacesAnyCondition.)
func TestCounterfactual(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(`name: t
title: t
lock: redlock
expected: unsafe
counterfactual:
  change: without the jump
steps:
  - do: acquire
    client: 1
    expect: granted
  - do: clock-jump
    node: C
    by: 15s
    cause: true
  - do: crash
    node: A
    for: 2s
    counterfactual:
      for: 0s
`))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Expected != "safe" || cf.Lock != "redlock" || len(cf.Steps) != 2 || cf.Steps[0].Expect != "" ||
		cf.Steps[1].Do != "crash" || cf.Steps[1].For.Duration != 0 || !cf.IsCounterfactual {
		t.Fatalf("counterfactual: %+v", cf)
	}
	if got := sc.CounterfactualChanges(); len(got) != 2 {
		t.Fatalf("changes %q, want the removed step and the changed one", got)
	}
}

// TestCounterfactualReplacesAnyCondition: a counterfactual block may
// replace any of the scenario's conditions, not only a listed few: here
// the TTL and a PostgreSQL timeout, which it once could not.
func TestCounterfactualReplacesAnyCondition(t *testing.T) {
	pg := strings.Replace(good, "lock: redlock", "lock: postgres-xact", 1)
	sc, err := Parse("x.yaml", []byte(pg+"ttl: 2s\nidle_in_transaction_session_timeout: 1s\n"+
		"counterfactual:\n  change: longer\n  expected: safe\n  ttl: 30s\n  idle_in_transaction_session_timeout: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	timeout := func(s *Scenario) time.Duration {
		return s.Settings.(backends.PostgresSettings).IdleInTransactionSessionTimeout
	}
	if cf.TTL.Duration != 30*time.Second || timeout(cf) != 0 || timeout(sc) != time.Second || sc.TTL.Duration != 2*time.Second {
		t.Fatalf("counterfactual ttl %v, timeout %v; story ttl %v, timeout %v", cf.TTL, timeout(cf), sc.TTL, timeout(sc))
	}
	if got := strings.Join(sc.CounterfactualChanges(), "; "); !strings.Contains(got, "ttl") || !strings.Contains(got, "idle_in_transaction_session_timeout") {
		t.Fatalf("changes %q do not name both fields", got)
	}
}

const good = `name: t
title: a test
lock: redlock
expected: unsafe
steps:
  - do: acquire
    client: 1
`

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top field", good + "colour: red\n", "x.yaml:8: colour: unknown field (known: name, title"},
		{"misspelt top field", good + "expectd: safe\n", "x.yaml:8: expectd: unknown field; did you mean expected?"},
		{"misspelt fault field", good + "  - do: pause\n    clinet: 1\n    for: 1s\n", "x.yaml:9: steps[1].clinet: unknown field of pause; did you mean client?"},
		{"unknown step field", strings.Replace(good, "client: 1", "clinet: 1", 1), "x.yaml:7: steps[0].clinet: unknown field; did you mean client?"},
		{"negative ttl", good + "ttl: -1s\n", "x.yaml:8: ttl: expected a positive duration, got -1s"},
		{"watchdog_max without a watchdog", good + "watchdog_max: 3\n", "x.yaml:8: watchdog_max: bounds the watchdog's renewals; the story has no watchdog"},
		{"job_once without a job", good + "job_once: true\n", "x.yaml:8: job_once: makes a scheduled job's first effect idempotent; the story runs no job (no write with a period)"},
		{"negative watchdog_max", good + "watchdog: token\nwatchdog_max: -1\n", "x.yaml:9: watchdog_max: expected a number of renewals, 0 or more, got -1"},
		{"bad duration", good + "ttl: ten\n", `x.yaml:8: ttl: expected a duration like 500ms or 10s, got "ten"`},
		{"wrong type", good + "clients: many\n", `x.yaml:8: clients: expected a whole number, got "many"`},
		{"unknown lock", strings.Replace(good, "lock: redlock", "lock: chubby", 1), `x.yaml:3: lock: unknown lock "chubby"`},
		{"unknown action", strings.Replace(good, "do: acquire", "do: acquier", 1), `x.yaml:6: steps[0].do: unknown action "acquier"`},
		{"client out of range", strings.Replace(good, "client: 1", "client: 3", 1), "x.yaml:7: steps[0].client: expected a client from 1 to 2, got 3"},
		{"unknown node", good + "  - do: clock-jump\n    node: F\n    by: 1s\n", `x.yaml:9: steps[1].node: unknown node "F": this scenario has 5 Redis node(s), A to E`},
		{"missing field", good + "  - do: clock-jump\n    node: C\n", `steps[1].by: missing: "clock-jump" needs by`},
		{"bad verdict", strings.Replace(good, "expected: unsafe", "expected: broken", 1), `x.yaml:4: expected: expected one of safe, unsafe, leaked, hung, got "broken"`},
		{"bad yaml", "name: [\n", "x.yaml:1: not valid YAML"},
		{"bad expect", strings.Replace(good, "client: 1", "client: 1\n    expect: accepted", 1), `x.yaml:8: steps[0].expect: expected one of granted, refused, unknown for "acquire", got "accepted"`},
		{"reason without refusal", strings.Replace(good, "client: 1", "client: 1\n    expect: granted\n    reason: held", 1), "steps[0].reason: expected a refusal reason"},
		{"read on an acquire", strings.Replace(good, "client: 1", "client: 1\n    expect: granted\n    read: 0", 1), "steps[0].read: a value read goes with a write"},
		{"cause without counterfactual", strings.Replace(good, "client: 1", "client: 1\n    cause: true", 1), "steps[0].cause: the scenario has no counterfactual block"},
		{"counterfactual that changes nothing", good + "counterfactual:\n  change: nothing\n", "counterfactual.change: the counterfactual changes nothing"},
		{"a step's old nodes", good + "  - do: partition\n    client: 1\n    nodes: [A]\n", "x.yaml:10: steps[1].nodes: renamed links: a step's list of the client's links"},
		{"a step's old fence", strings.Replace(good, "client: 1", "client: 1\n    fence: 1", 1), "x.yaml:8: steps[0].fence: renamed fencing_token"},
		{"a ttl the lock cannot grant", strings.Replace(good, "lock: redlock", "lock: etcd\nttl: 500ms", 1), "x.yaml:4: ttl: etcd's leases last at least 2s"},
		{"another fault's field", good + "  - do: pause\n    client: 1\n    by: 1s\n", "x.yaml:10: steps[1].by: unknown field of pause (its fields: client, node, for; and at, cause, counterfactual, do, say)"},
		{"a fault's field on an acquire", strings.Replace(good, "client: 1", "client: 1\n    links: [A]", 1), "x.yaml:8: steps[0].links: unknown field"},
		{"a fault's bad duration", good + "  - do: pause\n    client: 1\n    for: 5\n", `x.yaml:10: steps[1].for: expected a duration like 500ms or 10s, got "5"`},
		{"a step counterfactual's bad field", good + "  - do: pause\n    client: 1\n    for: 1s\n    counterfactual:\n      by: 1s\n", "x.yaml:12: steps[1].counterfactual.by: unknown field of pause"},
		{"counterfactual of the story's text", good + "counterfactual:\n  change: x\n  title: other\n", "x.yaml:10: counterfactual.title: unknown field"},
		{"counterfactual of a misspelt field", good + "counterfactual:\n  change: x\n  tll: 1s\n", "x.yaml:10: counterfactual.tll: unknown field; did you mean ttl?"},
		{"counterfactual that leaves out a cause and sets a field", good + "  - do: pause\n    client: 1\n    for: 1s\n    cause: true\ncounterfactual:\n  change: x\n  lock: redis\n", "x.yaml:11: steps[1].cause: the counterfactual sets lock already, and a counterfactual changes one thing: drop cause, or the counterfactual's lock"},
		{"counterfactual that does not flip", good + "counterfactual:\n  change: x\n  expected: unsafe\n  lock: redis\n", "counterfactual.expected: the counterfactual must flip the verdict"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("parsed; want error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(c.want, "did you mean") && strings.Contains(err.Error(), "known:") {
				t.Fatalf("error %q\nwant it to contain %q (a field meant, and no list)", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
	if _, err := Parse("x.yaml", []byte(good)); err != nil {
		t.Fatalf("good scenario: %v", err)
	}
}

func TestFindSuggestsCloseNames(t *testing.T) {
	_, err := Find("redlock-clock-jum")
	nf, ok := err.(*NotFoundError)
	if !ok {
		t.Fatalf("err = %v, want NotFoundError", err)
	}
	if len(nf.Close) == 0 || nf.Close[0] != "redlock-clock-jump" {
		t.Fatalf("close names = %v, want redlock-clock-jump first", nf.Close)
	}
	if _, err := Find("redlock-clock-jump"); err != nil {
		t.Fatal(err)
	}
}

// TestNegativeTimeoutsNamed: a negative duration is reported at its own
// field and line, each of them.
func TestNegativeTimeoutsNamed(t *testing.T) {
	head := "name: t\ntitle: t\nlock: postgres-session\nexpected: safe\n"
	steps := "steps:\n  - do: acquire\n    client: 1\n"
	for _, field := range []string{"idle_session_timeout", "idle_in_transaction_session_timeout", "watchdog_every"} {
		_, err := Parse("x.yaml", []byte(head+field+": -1s\n"+steps))
		if err == nil || !strings.HasPrefix(err.Error(), "x.yaml:5: "+field+":") {
			t.Errorf("%s: -1s: %v, want x.yaml:5 naming %s", field, err, field)
		}
	}
}

// TestStorageModesNamed: a write without storage is told every mode,
// fenced-write included.
func TestStorageModesNamed(t *testing.T) {
	_, err := Parse("x.yaml", []byte("name: t\ntitle: t\nlock: redis\nexpected: safe\nsteps:\n  - do: write\n    client: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "plain, fenced, fenced-write, token-cas or idempotent") {
		t.Errorf("a write without storage: %v", err)
	}
}

// TestUnknownNodeInTheLocksTerms: an unknown node of an etcd or a
// ZooKeeper story is named as a member, never as a Redis node.
func TestUnknownNodeInTheLocksTerms(t *testing.T) {
	for lock, want := range map[string]string{"etcd": "3 etcd member(s), A to C", "zookeeper": "3 ZooKeeper member(s), A to C"} {
		y := "name: t\ntitle: t\nlock: " + lock + "\nnodes: 3\nexpected: safe\nsteps:\n  - do: pause\n    node: F\n    for: 1s\n"
		if _, err := Parse("x.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Redis") {
			t.Errorf("%s, node F: %v, want %q", lock, err, want)
		}
		y = "name: t\ntitle: t\nlock: " + lock + "\nnodes: 3\nexpected: safe\nsteps:\n  - do: partition\n    client: 1\n    links: [F]\n"
		if _, err := Parse("x.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), "3 ") || strings.Contains(err.Error(), "Redis") {
			t.Errorf("%s, links [F]: %v", lock, err)
		}
	}
}

// TestCrashOnPostgres: a PostgreSQL story may crash its server, node pg;
// a fault that cannot strike it there, or pg in a story whose lock runs
// on other servers, is one line naming the field and what it takes.
func TestCrashOnPostgres(t *testing.T) {
	const pgStory = "name: t\ntitle: t\nlock: postgres-session\nexpected: safe\nsteps:\n  - do: acquire\n    client: 1\n"
	if _, err := Parse("x.yaml", []byte(pgStory+"  - do: crash\n    node: pg\n")); err != nil {
		t.Fatalf("crash on pg in a PostgreSQL story: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{pgStory + "  - do: pause\n    node: pg\n    for: 1s\n",
			`x.yaml:9: steps[1].node: unknown node "pg": this scenario's lock server is PostgreSQL, node pg, which pause does not strike (crash does)`},
		{pgStory + "  - do: crash\n    node: A\n", `x.yaml:9: steps[1].node: unknown node "A": this scenario's lock server is PostgreSQL, node pg`},
		{"name: t\ntitle: t\nlock: redis\nexpected: safe\nsteps:\n  - do: crash\n    node: pg\n", `x.yaml:7: steps[0].node: unknown node "pg": this scenario has 1 Redis node(s), A to A`},
	} {
		_, err := Parse("x.yaml", []byte(c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line starting %q", c.yaml, err, c.want)
		}
	}
}

// TestCounterfactualFixedIn: a counterfactual's own fixed_in goes to the
// counterfactual story (not the told one), changes nothing of the story
// (it is no override), and is refused where the counterfactual ends safe.
func TestCounterfactualFixedIn(t *testing.T) {
	story := strings.Replace(good, "lock: redlock", "lock: etcd\nttl: 2s", 1) + "counterfactual:\n  change: the service\n  lock: etcd-lock-service\n  fixed_in:\n    etcd: \"3.5\"\n"
	story = strings.Replace(story, "expected: unsafe", "expected: safe", 1)
	sc, err := Parse("x.yaml", []byte(story))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if sc.FixedOn(map[string]string{"etcd": "3.7.3"}) != "" || cf.FixedOn(map[string]string{"etcd": "3.7.3"}) != "etcd 3.5" || cf.FixedOn(map[string]string{"etcd": "3.4.23"}) != "" {
		t.Errorf("fixed: story %v, counterfactual %v", sc.FixedIn, cf.FixedIn)
	}
	if got := sc.CounterfactualChanges(); len(got) != 1 {
		t.Errorf("changes %q, want the lock alone", got)
	}
	flipped := strings.Replace(strings.Replace(story, "expected: safe", "expected: unsafe", 1), "  change: the service", "  change: the service\n  expected: safe", 1)
	if _, err := Parse("x.yaml", []byte(flipped)); err == nil || !strings.Contains(err.Error(), "ends safe: it has no bug to be fixed") {
		t.Errorf("a counterfactual ending safe with a fixed_in: %v", err)
	}
}
