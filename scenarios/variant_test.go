package scenarios

import (
	"math"
	"strings"
	"testing"

	"github.com/locksim/locksim/nemesis"
)

// TestLockVariant: a story played with another lock of its servers keeps
// its claims and takes the lock's nodes; a lock of other servers, or one
// with fewer nodes than the story names, or without the plain PEXPIRE its
// watchdog sends, cannot tell it; a counterfactual that itself changes
// the lock is skipped.
func TestLockVariant(t *testing.T) {
	find := func(name string) *Scenario {
		sc, err := Find(name)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	ttl := find("redis-ttl-expiry")
	v, err := WithLock(ttl, "redlock")
	if err != nil {
		t.Fatal(err)
	}
	if v.Scenario.Lock != "redlock" || v.Scenario.Nodes != 5 || ttl.Lock != "redis" || ttl.Nodes != 1 || v.SkipCF != "" || v.Scenario.Counterfactual == nil {
		t.Errorf("redis-ttl-expiry with redlock: lock %s, %d nodes, skip %q (the story's own: %s, %d)", v.Scenario.Lock, v.Scenario.Nodes, v.SkipCF, ttl.Lock, ttl.Nodes)
	}
	if v.Name() != "redis-ttl-expiry with lock redlock" || !strings.Contains(v.Scenario.Title, "played with lock redlock instead of redis") {
		t.Errorf("name %q, title %q", v.Name(), v.Scenario.Title)
	}
	if len(v.Scenario.Steps) != len(ttl.Steps) || v.Scenario.Expected != ttl.Expected {
		t.Error("the variant lost the story's steps or expected verdict")
	}
	if v, err := WithLock(ttl, "redis"); err != nil || v.Scenario != ttl || v.Name() != "redis-ttl-expiry" {
		t.Errorf("its own lock: %v, %v", v.Scenario, err)
	}

	if _, err := WithLock(ttl, "postgres-session"); err == nil || err.Error() != "scenario redis-ttl-expiry uses a redis lock; postgres-session is a postgres lock" {
		t.Errorf("another backend: %v", err)
	}
	if _, err := WithLock(ttl, "chubby"); err == nil || !strings.HasPrefix(err.Error(), `unknown lock "chubby"`) {
		t.Errorf("unknown lock: %v", err)
	}
	if _, err := WithLock(find("redlock-clock-jump"), "redis"); err == nil || !strings.Contains(err.Error(), "lock redis runs on one node, A") {
		t.Errorf("a five-node story with a one-node lock: %v", err)
	}

	naive := find("redis-naive-watchdog") // watchdog: pexpire
	for _, lock := range []string{"redislock", "rueidislock"} {
		if _, err := WithLock(naive, lock); err == nil || !strings.Contains(err.Error(), "plain PEXPIRE (watchdog: pexpire), which lock "+lock+" cannot send") {
			t.Errorf("a plain-PEXPIRE story with %s, which cannot send one: %v", lock, err)
		}
	}
	if _, err := WithLock(naive, "redis-plain-del"); err != nil {
		t.Errorf("a plain-PEXPIRE story with redis-plain-del: %v", err)
	}

	release := find("redis-unsafe-release") // its counterfactual is lock: redis
	v, err = WithLock(release, "redis")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.SkipCF, "it changes the lock (redis-plain-del -> redis") || v.Scenario.Counterfactual != nil || release.Counterfactual == nil {
		t.Errorf("counterfactual that changes the lock: skip %q, counterfactual %v", v.SkipCF, v.Scenario.Counterfactual)
	}
}

// TestSelect: a name, a file or a regex, each scenario once; a name that
// is neither keeps the "did you mean" error.
func TestSelect(t *testing.T) {
	list, err := Select(false, []string{"redlock-clock-jump", "^redlock-clock-jump(-control)?$"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range list {
		names = append(names, sc.Name)
	}
	if strings.Join(names, " ") != "redlock-clock-jump redlock-clock-jump-control" {
		t.Errorf("selected %v", names)
	}
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if list, err := Select(true, []string{"redlock-clock-jump"}); err != nil || len(list) != len(all) {
		t.Errorf("--all and a name: %d scenarios (%v), want the catalogue's %d", len(list), err, len(all))
	}
	for _, name := range []string{"redlock-clockjump", "redlock-["} {
		if _, err := Select(false, []string{name}); err == nil || !strings.Contains(err.Error(), "no scenario named") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestWithLockArticle: an etcd lock, a zookeeper lock.
func TestWithLockArticle(t *testing.T) {
	sc, err := Find("etcd-pause")
	if err != nil {
		t.Fatal(err)
	}
	_, err = WithLock(sc, "zookeeper")
	if want := "scenario etcd-pause uses an etcd lock; zookeeper is a zookeeper lock"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestReferenceFor: a stand-in is judged against the lock it stands in
// for, whatever lock the story was told with; a lock that stands in for
// none is judged against the story's own (a mutant's original).
func TestReferenceFor(t *testing.T) {
	for _, c := range []struct {
		story, lock string
		program     bool
		want, own   string
	}{
		{"zookeeper-lock-delay", "zookeeper", true, "zookeeper", "zookeeper-lock-delay"}, // Kazoo, like zookeeper
		{"postgres-xact-idle-timeout", "postgres-hashtext", false, "postgres-session", "postgres-xact"},
		{"redis-unsafe-release", "redislock", false, "redis", "redis-plain-del"},
		{"redis-ttl-expiry", "redsync", false, "redlock", "redis"},
		{"redis-unsafe-release", "redis", false, "redis", "redis-plain-del"},                      // the mutant's original
		{"postgres-idle-timeout", "postgres-xact", false, "postgres-session", "postgres-session"}, // stands in for none
	} {
		sc, err := Find(c.story)
		if err != nil {
			t.Fatal(err)
		}
		if got := ReferenceFor(sc, c.lock, c.program); got != c.want {
			t.Errorf("%s on %s: reference %s, want %s", c.lock, c.story, got, c.want)
		}
		v, err := WithLock(sc, c.lock)
		if err != nil {
			t.Fatalf("%s on %s: %v", c.lock, c.story, err)
		}
		if got := v.Scenario.OwnLock(); got != c.own {
			t.Errorf("%s on %s: own lock %s, want %s", c.lock, c.story, got, c.own)
		}
	}
}

// TestUnrealistic: the catalogue's stories whose fault is outside what
// real machines have are exactly its clock drifts past 500 ppm (every
// drift story but the slew's: 1.1x to 4x); no other fault kind is
// bounded, and a drift at NTP's slew rate (redlock-clock-slew) is within.
func TestUnrealistic(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range all {
		drifts := false
		for _, st := range sc.Steps {
			if p, ok := st.Params.(*nemesis.ClockDriftParams); ok {
				drifts = drifts || math.Abs(p.Rate-1)*1e6 > nemesis.MaxDriftPPM
			}
		}
		got := sc.Unrealistic()
		if (got != "") != drifts || (drifts && !strings.Contains(got, "ppm")) {
			t.Errorf("%s (drifts a clock: %v): %q", sc.Name, drifts, got)
		}
		if got != "" {
			n++
		}
	}
	if n == 0 {
		t.Error("no story of the catalogue is outside the realistic range: the drift stories should be")
	}
}
