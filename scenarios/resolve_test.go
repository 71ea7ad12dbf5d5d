package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestResolve: a story resolved with changes is a new story, validated,
// whose counterfactual is built once, from the story as changed; the
// story it came from is left as it was.
func TestResolve(t *testing.T) {
	sc, err := Find("redis-ttl-expiry")
	if err != nil {
		t.Fatal(err)
	}
	cf1, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if cf2, _ := sc.CounterfactualScenario(); cf2 != cf1 {
		t.Error("the counterfactual was built again")
	}
	v, err := Resolve(sc, Changes{Lock: "redlock", Clients: 3})
	if err != nil {
		t.Fatal(err)
	}
	played := v.Scenario
	if played == sc || played.Lock != "redlock" || played.Clients != 3 || sc.Lock != "redis" || sc.Clients != 2 {
		t.Errorf("resolved: lock %s, %d clients; the story's own: %s, %d", played.Lock, played.Clients, sc.Lock, sc.Clients)
	}
	cf, err := played.CounterfactualScenario()
	if err != nil || cf.Lock != "redlock" || cf.Clients != 3 || cf.Nodes != played.Nodes {
		t.Errorf("the counterfactual of the story as played: %+v, %v", cf, err)
	}
	if same, err := Resolve(sc, Changes{}); err != nil || same.Scenario != sc {
		t.Errorf("no change: %v, %v", same.Scenario, err)
	}
	if _, err := Resolve(sc, Changes{Clients: 65}); err == nil || !strings.Contains(err.Error(), "redis-ttl-expiry, as played: scenarios/redis-ttl-expiry.yaml") ||
		!strings.Contains(err.Error(), "clients: expected 1 to 64 clients, got 65") {
		t.Errorf("a change the story cannot take: %v", err)
	}

	gen, err := Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Resolve(gen, Changes{Trials: 7, Duration: 300 * time.Millisecond})
	if err != nil || g.Scenario.Generator.Trials != 7 || g.Scenario.Generator.Duration.Duration != 300*time.Millisecond || gen.Generator.Trials == 7 {
		t.Errorf("a generator's flags: %+v, %v (the story's own: %+v)", g.Scenario.Generator, err, gen.Generator)
	}
	// A comparison takes a lock of any servers; its TTL is checked at each
	// point it plays.
	if c, err := Resolve(gen, Changes{Compare: "etcd+fenced"}); err != nil || c.Scenario.Lock != "etcd" || c.Scenario.Fence != "postgres" || c.Scenario.Storage != "fenced" {
		t.Errorf("a comparison with etcd+fenced: %+v, %v", c.Scenario, err)
	}

	// The reference plays a client program's story with the harness's
	// own worker, and no counterfactual.
	prog, err := Parse("prog.yaml", []byte(`name: prog
title: a client program's story
lock: redis
client_cmd: [node, client.js]
expected: unsafe
counterfactual:
  change: without the pause
steps:
  - do: acquire
    client: 1
  - do: pause
    client: 1
    for: 1s
    cause: true
`))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Resolve(prog, Changes{Lock: ReferenceLock(prog), Reference: true})
	if err != nil || len(ref.Scenario.ClientCmd) != 0 || ref.Scenario.Counterfactual != nil || len(prog.ClientCmd) == 0 {
		t.Errorf("the reference of a client program's story: %v, %v", ref.Scenario, err)
	}
	for _, st := range ref.Scenario.Steps {
		if st.Cause || st.Counterfactual != nil {
			t.Errorf("the reference keeps a mark for the counterfactual it has not: %+v", st)
		}
	}
}

// TestOneLockRefusesTwoKeys: a lock that takes one lock whatever its key
// (clients.Spec.OneLock: goose, migrate) cannot tell a story that locks
// two keys (postgres-hashtext-collision): told with it, the second key
// would be refused for a lock nobody holds, a liveness failure its
// maintainers designed; it tells a story of one key as any lock does.
func TestOneLockRefusesTwoKeys(t *testing.T) {
	two, err := Find("postgres-hashtext-collision")
	if err != nil {
		t.Fatal(err)
	}
	one, err := Find("postgres-session")
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"goose", "migrate"} {
		_, err := WithLock(two, lock)
		var na *inapplicable
		if !errors.As(err, &na) || !strings.Contains(err.Error(), "locks 2 keys") {
			t.Errorf("postgres-hashtext-collision with %s: %v, want it refused as locking 2 keys", lock, err)
		}
		if _, err := WithLock(one, lock); err != nil {
			t.Errorf("postgres-session with %s: %v", lock, err)
		}
	}
	if _, err := WithLock(two, "postgres-session"); err != nil {
		t.Errorf("postgres-hashtext-collision with postgres-session: %v", err)
	}
}
