// judge.go decides which of a subject's cells and which hunt count as
// findings about it: a story whose fault no real machine has teaches and
// is not counted; a story that tests a property the lock never promised
// shows that it "does not promise" it, and is not counted either.

package findings

import (
	"fmt"
	"strings"
	"sync"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/promise"
	"github.com/locksim/locksim/scenarios"
)

// KindUnpromised is a cell that would be a finding (cellkind.Finding),
// from a story that tests a property the lock does not promise
// (scenarios.Scenario.Tests, Subject.Promises): it is shown, and not
// counted against the library.
const KindUnpromised = "unpromised"

// legacyUnrealistic opens the text of a cell an earlier locksim judged
// unrealistic, before cells kept what they were played as (WasKind).
const legacyUnrealistic = "not counted: the story's fault is a form no machine has ("

// StoryFinder finds a story by its name or file (scenarios.Find).
type StoryFinder func(name string) (*scenarios.Scenario, error)

// Judge decides, for every subject of the report, refreshed or not, which
// of its cells count: each cell is first put back as it was played, then
// a finding whose story's fault is outside what real machines have
// becomes KindUnrealistic, and one whose story tests a property the
// subject does not promise becomes KindUnpromised, each saying why. A
// hunt's find is judged by its shrunk story alike (Hunt.NotCounted).
func (r *Report) Judge(find StoryFinder) {
	defer func() { r.defects = r.Defects(find) }()
	for i := range r.Subjects {
		s := &r.Subjects[i]
		for j := range s.Cells {
			c := &s.Cells[j]
			c.restore()
			if c.Kind != cellkind.Finding {
				continue
			}
			sc, err := find(c.Story)
			if err != nil {
				continue // a story this locksim no longer has: counted as played
			}
			if kind, why := s.uncounted(sc, c.tests(sc)); kind != "" {
				c.WasKind, c.WasText = c.Kind, c.Text
				c.Kind, c.Text = kind, "not counted: "+why+"; "+c.Text
			}
		}
		if h := s.Hunt; h != nil {
			h.NotCounted = ""
			if sc := h.found(); sc != nil {
				_, h.NotCounted = s.uncounted(sc, sc.Tests)
			}
		}
	}
}

// uncounted says why a story's finding, which breaks property p, does
// not count against s, and as what kind of cell: "" when it counts.
func (s Subject) uncounted(sc *scenarios.Scenario, p promise.Property) (kind, why string) {
	if s.Patched != "" {
		return KindUnpromised, "the library is played as no release installs it (" + s.Patched + ")"
	}
	if w := sc.Unrealistic(); w != "" {
		return KindUnrealistic, "the story's fault is outside what real machines have (" + w + ")"
	}
	if _, ok := s.Promises.Of(p, s.Lock); !ok {
		if len(s.Promises) == 0 {
			return KindUnpromised, fmt.Sprintf("%s declares no promises, so not %s, which the story tests (%s)", s.Name, p.Says(), p)
		}
		return KindUnpromised, fmt.Sprintf("%s does not promise %s, which the story tests (%s)", s.Name, p.Says(), p)
	}
	return "", ""
}

// testsOf is the property a story tests: its own tests:, or, for a story
// that says none (a hunt's shrunk story), what its verdict breaks: a lock
// held after its holder let it go (leaked), or a call that never
// returned (hung: the hunts' hung calls are releases cut off from their
// servers), breaks a release that frees it at once; faults that are all
// a client's own clock (a jump, a drift) break nothing at the server,
// only the client's timing of its lease, so they test a lease timed by a
// monotonic clock; anything else mutual exclusion.
func testsOf(sc *scenarios.Scenario) promise.Property {
	switch {
	case sc.Tests != "":
		return sc.Tests
	case sc.Expected == checker.Leaked || sc.Expected == checker.Hung:
		return promise.PromptRelease
	case clientClockOnly(sc.FaultShape()):
		return promise.MonotonicLease
	}
	return promise.Exclusion
}

// clientClockOnly says every fault of a shape is a client's clock.
func clientClockOnly(shape []string) bool {
	for _, f := range shape {
		if f != "clock-jump client" && f != "clock-drift client" {
			return false
		}
	}
	return len(shape) > 0
}

// tests is the property a finding cell shows broken: its story's, unless
// the story tests a safety property and the lock ended hung or leaked
// there: then exclusion held, and what broke is a call's bound (hung) or
// a release that frees the lock (leaked), at the step where the two part.
func (c Cell) tests(sc *scenarios.Scenario) promise.Property {
	p := testsOf(sc)
	if p.Liveness() {
		return p
	}
	switch c.endedAs() {
	case checker.Hung:
		return promise.BoundedCalls
	case checker.Leaked:
		return promise.PromptRelease
	}
	return p
}

// endedAs is the verdict a finding cell's text says the lock ended in
// ("... ended leaked where the reference ..."), "" when it says none.
func (c Cell) endedAs() checker.Verdict {
	for _, v := range []checker.Verdict{checker.Unsafe, checker.Leaked, checker.Hung} {
		if strings.Contains(c.Text, " ended "+string(v)+" where ") {
			return v
		}
	}
	return ""
}

// catalogue is the catalogue's stories, parsed once for every hunt a
// page judges and groups (it is embedded: it does not change).
var catalogue = sync.OnceValues(scenarios.Catalogue)

// found is a differential hunt's shrunk story, with the property it
// tests: the one its baseline's catalogue story under the same faults
// tests (scenarios.DefenceOf: the step where the two part), else what
// its verdict breaks (testsOf); nil when it found nothing or has no
// baseline.
func (h *Hunt) found() *scenarios.Scenario {
	if h == nil || !h.Found || h.Baseline == "" || h.Story == "" {
		return nil
	}
	sc, err := scenarios.Parse("found.yaml", []byte(h.Story))
	if err != nil {
		return nil
	}
	if sc.Tests == "" {
		if all, err := catalogue(); err == nil {
			sc.Tests = scenarios.DefenceOf(sc.FaultShape(), h.Baseline, all)
		}
		if sc.Tests == "" {
			sc.Tests = testsOf(sc)
		}
	}
	return sc
}

// restore puts a cell back as it was played, before any judging.
func (c *Cell) restore() {
	switch {
	case c.WasKind != "":
		c.Kind, c.Text, c.WasKind, c.WasText = c.WasKind, c.WasText, "", ""
	case c.Kind == KindUnrealistic && strings.HasPrefix(c.Text, legacyUnrealistic):
		if _, rest, ok := strings.Cut(c.Text[len(legacyUnrealistic):], "); "); ok {
			c.Kind, c.Text = cellkind.Finding, rest
		}
	}
}
