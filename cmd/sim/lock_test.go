package main

import (
	"strings"
	"testing"

	"locksim/scenarios"
)

// TestLockVariant: a story played with another lock of its servers keeps
// its claims and takes the lock's nodes; a lock of other servers, or one
// with fewer nodes than the story names, cannot tell it; a counterfactual
// that itself changes the lock is skipped.
func TestLockVariant(t *testing.T) {
	find := func(name string) *scenarios.Scenario {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	ttl := find("redis-ttl-expiry")
	v, err := withLock(ttl, "redlock")
	if err != nil {
		t.Fatal(err)
	}
	if v.sc.Lock != "redlock" || v.sc.Nodes != 5 || ttl.Lock != "redis" || ttl.Nodes != 1 || v.skipCF != "" || v.sc.Counterfactual == nil {
		t.Errorf("redis-ttl-expiry with redlock: lock %s, %d nodes, skip %q (the story's own: %s, %d)", v.sc.Lock, v.sc.Nodes, v.skipCF, ttl.Lock, ttl.Nodes)
	}
	if v.name() != "redis-ttl-expiry with lock redlock" || !strings.Contains(v.sc.Title, "played with lock redlock instead of redis") {
		t.Errorf("name %q, title %q", v.name(), v.sc.Title)
	}
	if len(v.sc.Steps) != len(ttl.Steps) || v.sc.Expected != ttl.Expected {
		t.Error("the variant lost the story's steps or expected verdict")
	}
	if v, err := withLock(ttl, "redis"); err != nil || v.sc != ttl || v.name() != "redis-ttl-expiry" {
		t.Errorf("its own lock: %v, %v", v.sc, err)
	}

	if _, err := withLock(ttl, "postgres-session"); err == nil || err.Error() != "scenario redis-ttl-expiry uses a redis lock; postgres-session is a postgres lock" {
		t.Errorf("another backend: %v", err)
	}
	if _, err := withLock(ttl, "zookeeper"); err == nil || !strings.HasPrefix(err.Error(), `--lock: unknown lock "zookeeper"`) {
		t.Errorf("unknown lock: %v", err)
	}
	if _, err := withLock(find("redlock-clock-jump"), "redis"); err == nil || !strings.Contains(err.Error(), "lock redis runs on one node, A") {
		t.Errorf("a five-node story with a one-node lock: %v", err)
	}

	release := find("redis-unsafe-release") // its counterfactual is lock: redis
	v, err = withLock(release, "redis")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.skipCF, "it changes the lock (redis-plain-del -> redis") || v.sc.Counterfactual != nil || release.Counterfactual == nil {
		t.Errorf("counterfactual that changes the lock: skip %q, counterfactual %v", v.skipCF, v.sc.Counterfactual)
	}
}

// TestRunLockBadInputExits2: --lock refuses bad input in one line, before
// anything starts.
func TestRunLockBadInputExits2(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"other backend", []string{"run", "redis-ttl-expiry", "--lock", "postgres-session"}, "sim: scenario redis-ttl-expiry uses a redis lock; postgres-session is a postgres lock\n"},
		{"unknown lock", []string{"run", "redis-ttl-expiry", "--lock", "zookeeper"}, `--lock: unknown lock "zookeeper"`},
		{"too few nodes", []string{"run", "redlock-clock-jump", "--lock", "redis"}, "names node"},
		{"family", []string{"run", "--all", "--lock", "redis"}, "sim matrix --locks redis runs only the stories it can play"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errb := sim(t, c.args...)
			if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errb, c.want)
			}
		})
	}
}
