// words.go: the few words a table cell of the page holds; the whole
// text is a click away (HTML) or in the lock's own section.

package findings

import (
	"fmt"
	"strings"

	"github.com/locksim/locksim/cellkind"
)

// cellWords are a cell's kind in a few words.
var cellWords = map[string]string{
	cellkind.Match: "as expected", cellkind.Differs: "otherwise than told", cellkind.Finding: "finding",
	cellkind.Peer: "worse than the story's own lock", cellkind.Story: "its own story", cellkind.Unknown: "unknown",
	cellkind.Error: "harness error", cellkind.NA: "n/a", KindUnpromised: "does not promise it", KindUnrealistic: "teaches, not counted",
}

// Word is the cell in a few words: its kind, and the verdict its text
// opens with ("finding: unsafe").
func (c Cell) Word() string {
	w := cellWords[c.Kind]
	if w == "" {
		w = c.Kind
	}
	if v := c.verdictWord(); v != c.Kind && v != "" && c.Kind != cellkind.NA {
		w += ": " + v
	}
	return w
}

// Short is the hunt's result in a few words.
func (h *Hunt) Short() string {
	switch {
	case h == nil:
		return "not run"
	case h.Error != "":
		return "could not run"
	case h.Found && h.Baseline != "" && h.NotCounted != "":
		return "worse than " + h.Baseline + ", not counted"
	case h.Found && h.Baseline != "":
		return strings.TrimSpace("worse than " + h.Baseline + " " + paren(h.Reproduced))
	case h.Found && h.Trap != "":
		return "the lease trap every lock shares"
	case h.Found && h.ToldBy != "":
		return "the schedule of " + h.ToldBy
	case h.Found && h.Untold:
		return "a schedule no story tells"
	case h.Found:
		return "found"
	case h.Unsteady != "":
		return "nothing steady"
	case h.Baseline != "":
		return fmt.Sprintf("nothing worse than %s (%d candidates)", h.Baseline, h.Runs)
	}
	return fmt.Sprintf("nothing (%d candidates)", h.Runs)
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// VersionWords says in a few words what version of its library the
// subject played: the package and version from the newest releases'
// list, with the newest; else its About, cut short.
func (r *Report) VersionWords(s Subject) string {
	lib := s.library()
	for _, n := range r.newest {
		if n.Library == lib {
			return fmt.Sprintf("%s %s (newest %s)", n.Package, n.Played, n.Newest)
		}
	}
	about := s.About
	if len(about) > 60 {
		if i := strings.LastIndex(about[:60], " "); i > 0 {
			about = about[:i] + "…"
		}
	}
	return about
}
