package findings

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// TestNoticeColumns: each lock's two columns give, for its pause story
// and its partition story (the first of NoticeStories it has a cell of),
// how long after the give-away its holder learned it and how long two
// clients both believed they held it, naming the story; "never", nothing
// given away, no story, and a cell that could not be played each say so.
func TestNoticeColumns(t *testing.T) {
	const s = int64(time.Second)
	renewal := &checker.Notice{GivenAway: true, Learned: true, By: checker.LearnedByRenewal, GivenAt: 3 * s, LearnedAt: 3*s + 722*s/1000,
		After: 722 * time.Millisecond, End: 5 * s, Overlap: 12 * time.Millisecond}
	refused := &checker.Notice{GivenAway: true, Learned: true, By: checker.LearnedByRefusal, After: 2484 * time.Millisecond, Overlap: 1500 * time.Millisecond,
		Event: history.Event{Type: history.Fail, Op: history.OpRelease, Reason: history.ReasonNotHeld}}
	never := &checker.Notice{GivenAway: true, GivenAt: 5 * s, End: 6*s + 300*s/1000, Overlap: 13 * time.Millisecond}
	nothing := &checker.Notice{End: 4 * s}
	early := &checker.Notice{GivenAway: true, Learned: true, By: checker.LearnedByCheck, After: -300 * time.Millisecond}
	for _, c := range []struct {
		name            string
		cells           []Cell
		notice, overlap []string
	}{
		{"redis: a watchdog, no partition story",
			[]Cell{{Story: "redis-ttl-expiry", Kind: "match", Notice: nothing}, {Story: "redis-watchdog-pause", Kind: "match", Notice: renewal}},
			[]string{"pause: after 722 ms, by its watchdog's renewal (redis-watchdog-pause)", "partition: no story of its servers"},
			[]string{"pause: 12 ms (redis-watchdog-pause)", "partition: no story of its servers"}},
		{"zookeeper: a refused release, never",
			[]Cell{{Story: "zookeeper-partition", Kind: "match", Notice: never}, {Story: "zookeeper-pause", Kind: "match", Notice: refused}},
			[]string{"pause: after 2.48 s, by its release, refused (not-held) (zookeeper-pause)", "partition: never: still believed it 1.30 s later, at the story's end (zookeeper-partition)"},
			[]string{"pause: 1.50 s (zookeeper-pause)", "partition: 13 ms (zookeeper-partition)"}},
		{"redlock: the first story of the list, nothing given away",
			[]Cell{{Story: "redis-watchdog-pause", Kind: "match", Notice: renewal}, {Story: "redlock-pause-after-acquire", Kind: "match", Notice: early},
				{Story: "redlock-partition-penalty", Kind: "match", Notice: nothing}},
			[]string{"pause: 300 ms before it was given away, by its lease check before a write (redlock-pause-after-acquire)", "partition: not given away while held (redlock-partition-penalty)"},
			[]string{"pause: none (redlock-pause-after-acquire)", "partition: none (redlock-partition-penalty)"}},
		{"redislock: the first story n/a (a node it lacks), the next played",
			[]Cell{{Story: "redlock-pause-after-acquire", Kind: "na", Text: "n/a: names node E"}, {Story: "redis-watchdog-pause", Kind: "match", Notice: renewal},
				{Story: "redlock-partition-penalty", Kind: "na", Text: "n/a: names node E"}},
			[]string{"pause: after 722 ms, by its watchdog's renewal (redis-watchdog-pause)", "partition: n/a: names node E (redlock-partition-penalty)"},
			[]string{"pause: 12 ms (redis-watchdog-pause)", "partition: not measured (redlock-partition-penalty)"}},
		{"a program that cannot play it; a cell played before",
			[]Cell{{Story: "redis-watchdog-pause", Kind: "na", Text: "n/a: no watchdog"}, {Story: "etcd-partition", Kind: "match"}},
			[]string{"pause: n/a: no watchdog (redis-watchdog-pause)", "partition: not measured when this cell was played (etcd-partition)"},
			[]string{"pause: not measured (redis-watchdog-pause)", "partition: not measured (etcd-partition)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := Subject{Name: "x", Cells: c.cells}
			if got := sub.NoticeLines(); strings.Join(got, "\n") != strings.Join(c.notice, "\n") {
				t.Errorf("notice column:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.notice, "\n"))
			}
			if got := sub.OverlapLines(); strings.Join(got, "\n") != strings.Join(c.overlap, "\n") {
				t.Errorf("overlap column:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.overlap, "\n"))
			}
		})
	}

	r := &Report{Subjects: []Subject{{Name: "redis", Cells: []Cell{{Story: "redis-watchdog-pause", Kind: "match", Notice: renewal}}}}}
	md := string(r.Markdown())
	if !strings.Contains(md, "| learns its lock was given away | both believed they held it |") ||
		!strings.Contains(md, "| pause: after 722 ms, by its watchdog's renewal (redis-watchdog-pause)<br>partition: no story of its servers | pause: 12 ms (redis-watchdog-pause)<br>partition: no story of its servers |") {
		t.Errorf("Markdown:\n%s", md)
	}
	h, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "<td>pause: after 722 ms, by its watchdog&#39;s renewal (redis-watchdog-pause)<br>partition: no story of its servers</td>") {
		t.Errorf("HTML:\n%s", h)
	}
}
