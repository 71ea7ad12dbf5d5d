package findings

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

// NoticeStories are the stories whose runs give a lock's time to notice
// and overlap (checker.Notice), by the fault that takes its lock away:
// each subject is measured by the first of the list it played (a story
// of its servers not n/a for it), as sim findings played it; failing
// that, the first n/a one says why.
var NoticeStories = []struct {
	// Fault is the kind of fault, in the page's words; Stories the
	// stories that tell it, the more telling first.
	Fault   string
	Stories []string
}{
	{"pause", []string{"redlock-pause-after-acquire", "redis-watchdog-pause", "etcd-pause", "zookeeper-pause"}},
	{"partition", []string{"redlock-partition-penalty", "etcd-partition", "zookeeper-partition", "postgres-partition-leak"}},
}

// Measure is one fault's time to notice and overlap for a subject.
type Measure struct {
	// Fault is the kind of fault (NoticeStories); Story the cell that
	// measured it, "" when the subject has none of its stories.
	Fault string
	Story string
	// Notice is what the cell's run measured; nil when it measured
	// nothing, and Why says why (the cell's own words).
	Notice *checker.Notice
	Why    string
}

// Measures are the subject's time to notice and overlap, one per fault
// of NoticeStories, read from its cells.
func (s Subject) Measures() []Measure {
	var out []Measure
	for _, f := range NoticeStories {
		m := Measure{Fault: f.Fault}
		// The first story played; failing that, the first n/a cell,
		// which says why none could be.
		c, ok := s.firstCell(f.Stories, false)
		if !ok {
			c, ok = s.firstCell(f.Stories, true)
		}
		if ok {
			m.Story, m.Notice = c.Story, c.Notice
			if c.Notice == nil {
				m.Why = c.Text
				if c.Kind != cellkind.NA && c.Kind != cellkind.Error && c.Kind != cellkind.Story {
					m.Why = "not measured when this cell was played"
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// firstCell is the subject's cell of the first of stories it has one of:
// an n/a cell (na) or a played one (!na).
func (s Subject) firstCell(stories []string, na bool) (Cell, bool) {
	for _, story := range stories {
		for _, c := range s.Cells {
			if c.Story == story && (c.Kind == cellkind.NA) == na {
				return c, true
			}
		}
	}
	return Cell{}, false
}

// NoticeWords says how long after its lock was given away the holder
// learned it: "pause: after 722 ms, by its watchdog's renewal
// (redis-watchdog-pause)".
func (m Measure) NoticeWords() string {
	n := m.Notice
	var s string
	switch {
	case m.Story == "":
		return fmt.Sprintf("%s: no story of its servers", m.Fault)
	case n == nil:
		s = m.Why
	case !n.GivenAway:
		s = "not given away while held"
	case !n.Learned:
		s = fmt.Sprintf("never: still believed it %s later, at the story's end", span(time.Duration(n.End-n.GivenAt)))
	case n.After < 0:
		s = fmt.Sprintf("%s before it was given away, %s", span(-n.After), learnedBy(n))
	default:
		s = fmt.Sprintf("after %s, %s", span(n.After), learnedBy(n))
	}
	return fmt.Sprintf("%s: %s (%s)", m.Fault, s, m.Story)
}

// OverlapWords says how long two clients both believed they held the
// lock: "pause: 12 ms (redis-watchdog-pause)".
func (m Measure) OverlapWords() string {
	n := m.Notice
	var s string
	switch {
	case m.Story == "":
		return fmt.Sprintf("%s: no story of its servers", m.Fault)
	case n == nil:
		s = "not measured"
	case n.Overlap == 0:
		s = "none"
	default:
		s = span(n.Overlap)
	}
	return fmt.Sprintf("%s: %s (%s)", m.Fault, s, m.Story)
}

// learnedBy says how the holder learned it.
func learnedBy(n *checker.Notice) string {
	switch n.By {
	case checker.LearnedByCheck:
		return "by its lease check before a write"
	case checker.LearnedByRenewal:
		return "by its watchdog's renewal"
	case checker.LearnedByRefusal:
		if n.Event.Reason == history.ReasonNoLease {
			return fmt.Sprintf("by its %s, refused as it had dropped the lease", n.Event.Op)
		}
		return fmt.Sprintf("by its %s, refused (%s)", n.Event.Op, n.Event.Reason)
	}
	return "by " + n.By
}

// span is a duration as the page gives it: ms below a second, else
// seconds to two places.
func span(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// NoticeLines and OverlapLines are a subject's two cells of the page's
// table, a line per fault.
func (s Subject) NoticeLines() []string  { return s.measureLines(Measure.NoticeWords) }
func (s Subject) OverlapLines() []string { return s.measureLines(Measure.OverlapWords) }

func (s Subject) measureLines(words func(Measure) string) []string {
	var out []string
	for _, m := range s.Measures() {
		out = append(out, words(m))
	}
	return out
}
