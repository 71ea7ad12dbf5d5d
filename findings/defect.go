// defect.go groups what the page counts into defects: one per broken
// promise of one library, whatever number of stories and hunts show it.

package findings

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/promise"
	"github.com/locksim/locksim/scenarios"
)

// Defect is one promise of one library that the runs show broken: the
// cells that count against it (Judge) for that promise, and the hunts
// whose find counts, under the library's exclusion promise. Cells of one
// library that break one promise are one defect, however many stories
// and locks of the library show it.
type Defect struct {
	// Library is the program's folder under examples/, or the registered
	// lock's name; About says what it is, with its version.
	Library string
	About   string
	// Property is the promise it breaks, and Promise the library's words
	// for it.
	Property promise.Property
	Promise  promise.Promise
	// Shown are the cells and hunts that show it, each with the command
	// that plays it again.
	Shown []Shown
}

// Shown is one cell or hunt that shows a defect.
type Shown struct {
	// Subject is the page's row; What the story ("redis-late-release",
	// with its server where it names one) or "its hunt".
	Subject, What string
	// Count is k of n: the runs that ended as the finding says, of those
	// played ("1 of 1 in this run"; a hunt's "reproduced 3 of 3").
	Count   string
	Command string
}

// library is the subject's library: its program's folder, or its
// registered lock's name.
func (s Subject) library() string {
	if s.Program == nil {
		return s.Name
	}
	return filepath.Base(filepath.Dir(s.Program[len(s.Program)-1]))
}

// Defects groups the report's counted cells and hunts (as Judge left
// them) into defects, by library and promise, in library order. find
// finds a cell's story, for the property it tests.
func (r *Report) Defects(find StoryFinder) []Defect {
	var out []Defect
	add := func(s Subject, p promise.Property, sh Shown) {
		// One promise of one library: its words, where a library gives
		// its locks different words for one property (tooz's drivers),
		// part its defects.
		lib := s.library()
		q, _ := s.Promises.Of(p, s.Lock)
		i := slices.IndexFunc(out, func(d Defect) bool { return d.Library == lib && d.Property == p && d.Promise.Source == q.Source })
		if i < 0 {
			out = append(out, Defect{Library: lib, About: s.About, Property: p, Promise: q})
			i = len(out) - 1
		}
		out[i].Shown = append(out[i].Shown, sh)
	}
	for _, s := range r.Subjects {
		for _, c := range s.Cells {
			if c.Kind != cellkind.Finding {
				continue
			}
			p := promise.Exclusion
			if sc, err := find(c.Story); err == nil {
				p = testsOf(sc)
			}
			add(s, p, Shown{Subject: s.Name, What: c.Where(), Count: "1 of 1 in this run", Command: c.Command})
		}
		if h := s.Hunt; h != nil && h.Found && h.Baseline != "" && h.NotCounted == "" {
			p := promise.Exclusion
			if sc, err := scenarios.Parse("found.yaml", []byte(h.Story)); err == nil {
				p = testsOf(sc)
			}
			add(s, p, Shown{Subject: s.Name, What: "its hunt (worse than " + h.Baseline + ")", Count: h.Reproduced, Command: h.Command})
		}
	}
	slices.SortStableFunc(out, func(a, b Defect) int {
		return cmp.Or(strings.Compare(a.Library, b.Library), strings.Compare(string(a.Property), string(b.Property)))
	})
	return out
}

// Title is the defect in one line: "redis-lock: breaks its promise of a
// release checked against its own token".
func (d Defect) Title() string {
	return fmt.Sprintf("%s: breaks its promise of %s", d.Library, d.Property.Says())
}

// ShownLine lists what shows the defect, in a few words each.
func (d Defect) ShownLine() string {
	var xs []string
	for _, s := range d.Shown {
		w := s.What
		if s.Subject != d.Library {
			w = s.Subject + ": " + w
		}
		if s.Count != "" {
			w += " (" + s.Count + ")"
		}
		xs = append(xs, w)
	}
	return strings.Join(xs, "; ")
}
