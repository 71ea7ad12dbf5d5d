package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestNoticeOnRealServers plays, as sim findings does, the pause story of
// two locks whose holders learn in two ways, and the partition story of
// one, on real servers, and reads the figures the page shows:
//   - redis (redis-watchdog-pause): its watchdog is stopped with it; its
//     first renewal after the pause finds the key gone, so it learns
//     within a renewal period (300ms) of waking;
//   - zookeeper (zookeeper-pause): its session expired while it was
//     stopped, and nothing tells it until its release, which the story
//     makes 1.5s after its stale write: it learns by the refusal, later
//     than redis's holder;
//   - zookeeper (zookeeper-partition): cut off, it is never told within
//     the story.
//
// Each two clients both believed they held the lock for a while.
func TestNoticeOnRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and ZooKeeper")
	}
	measure := func(t *testing.T, lock, story string) (*checker.Notice, []history.Event, findings.Subject) {
		t.Helper()
		sc, err := scenarios.Find(story)
		if err != nil {
			t.Fatal(err)
		}
		m, err := planFindings(lock, []*scenarios.Scenario{sc}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m.Play(context.Background(), reports.Play, runner.Options{Seed: 1}, nil)
		c := m.Cell(lock, story)
		if c.Notice == nil {
			t.Fatalf("%s on %s measured nothing: %s", lock, story, c.Text(0))
		}
		events, err := history.Load(filepath.Join(c.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sub := findings.Subject{Name: lock, Lock: lock, Cells: findingsCells(findings.Subject{Lock: lock}, m, "", false)}
		return c.Notice, events, sub
	}
	// pauseEnd is when the story's pause of client 1 ended.
	pauseEnd := func(t *testing.T, events []history.Event) int64 {
		t.Helper()
		for _, e := range events {
			if e.Type == history.Fault && e.Fault != nil && e.Fault.Effect == history.EffectPause && e.Fault.Client == 1 {
				return e.Time + e.Fault.Lasts
			}
		}
		t.Fatal("no pause of client 1 in the history")
		return 0
	}
	// tolerance is how late a woken client may run on this shared
	// 2-core machine.
	const tolerance = 500 * time.Millisecond
	given := func(t *testing.T, n *checker.Notice) {
		t.Helper()
		if !n.GivenAway || n.Holder != 1 || n.Taker != 2 || n.Overlap <= 0 {
			t.Fatalf("want client 1's lock given to client 2 and an overlap: %+v", n)
		}
	}

	redis, rEvents, rSub := measure(t, "redis", "redis-watchdog-pause")
	given(t, redis)
	wake := pauseEnd(t, rEvents)
	if !redis.Learned || redis.By != checker.LearnedByRenewal || redis.LearnedAt < wake || time.Duration(redis.LearnedAt-wake) > 300*time.Millisecond+tolerance {
		t.Errorf("redis: want learned by its renewal within 300ms (+%v) of waking at %d: %+v", tolerance, wake, redis)
	}
	if l := rSub.NoticeLines()[0]; !strings.HasPrefix(l, "pause: after ") || !strings.HasSuffix(l, "by its watchdog's renewal (redis-watchdog-pause)") {
		t.Errorf("redis's column: %q", l)
	}

	zk, zEvents, zSub := measure(t, "zookeeper", "zookeeper-pause")
	given(t, zk)
	wake = pauseEnd(t, zEvents)
	if !zk.Learned || zk.By != checker.LearnedByRefusal || zk.Event.Op != history.OpRelease || zk.Event.Reason != history.ReasonNotHeld ||
		time.Duration(zk.LearnedAt-wake) < 1500*time.Millisecond {
		t.Errorf("zookeeper: want learned by its refused release, 1.5s or more after waking at %d: %+v", wake, zk)
	}
	if zk.After <= redis.After {
		t.Errorf("zookeeper's holder learned after %v, redis's after %v: want the refusal later than the renewal", zk.After, redis.After)
	}
	if l := zSub.NoticeLines()[0]; !strings.HasSuffix(l, "by its release, refused (not-held) (zookeeper-pause)") {
		t.Errorf("zookeeper's column: %q", l)
	}

	cut, _, cSub := measure(t, "zookeeper", "zookeeper-partition")
	given(t, cut)
	if cut.Learned || cut.End <= cut.GivenAt {
		t.Errorf("zookeeper-partition: want never told, until the story's end: %+v", cut)
	}
	if l := cSub.NoticeLines()[1]; !strings.HasPrefix(l, "partition: never: still believed it ") {
		t.Errorf("zookeeper's partition column: %q", l)
	}
	t.Logf("redis, redis-watchdog-pause: %s; %s", rSub.NoticeLines()[0], rSub.OverlapLines()[0])
	t.Logf("zookeeper, zookeeper-pause: %s; %s", zSub.NoticeLines()[0], zSub.OverlapLines()[0])
	t.Logf("zookeeper, zookeeper-partition: %s; %s", cSub.NoticeLines()[1], cSub.OverlapLines()[1])
}
