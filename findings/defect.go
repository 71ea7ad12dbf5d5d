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
)

// Defect is one promise of one library that the runs show broken: the
// cells that count against it (Judge) for that promise, and the hunts
// whose find counts, under the property their shrunk story breaks
// (Hunt.found). Cells of one library that break one promise are one
// defect, however many stories and locks of the library show it.
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
	// Part is the lock of the library's it is in, when the library's
	// rows play several servers, each its own code ("" otherwise).
	Part string
	// Writeup is its hand-checked write-up (Attach), nil when none
	// covers it; Stale says why one that would was refused.
	Writeup *Writeup
	Stale   string
	// Replay is its k of n (sim findings replay), nil when never
	// replayed.
	Replay *Replay
}

// Shown is one cell or hunt that shows a defect.
type Shown struct {
	// Subject is the page's row and Lock its catalogue lock; What the
	// story ("redis-late-release", with its server where it names one)
	// or "its hunt".
	Subject, Lock, What string
	// Count is k of n: the runs that ended as the finding says, of those
	// played ("1 of 1 in this run"; a hunt's "reproduced 3 of 3").
	Count   string
	Command string
	// StoryName is a cell's story ("" for a hunt).
	StoryName string
	// Text is what the run showed (the cell's text, the hunt's summary);
	// Story a hunt's shrunk story.
	Text, Story string
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
	// A library whose rows play several servers (tooz's drivers) has a
	// mechanism per server: its defects part by the server too, where a
	// library on one server's locks (node-redlock on one node and on
	// five) has one mechanism for both.
	servers := map[string]map[string]bool{}
	for _, s := range r.Subjects {
		if servers[s.library()] == nil {
			servers[s.library()] = map[string]bool{}
		}
		servers[s.library()][s.Servers] = true
	}
	add := func(s Subject, p promise.Property, sh Shown) {
		// One promise of one library: its words, where a library gives
		// its locks different words for one property, part its defects.
		lib, part := s.library(), ""
		if len(servers[lib]) > 1 {
			part = s.Lock
		}
		q, _ := s.Promises.Of(p, s.Lock)
		i := slices.IndexFunc(out, func(d Defect) bool {
			return d.Library == lib && d.Property == p && d.Promise.Source == q.Source && d.Part == part
		})
		if i < 0 {
			out = append(out, Defect{Library: lib, About: s.About, Property: p, Promise: q, Part: part})
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
				p = c.tests(sc)
			}
			add(s, p, Shown{Subject: s.Name, Lock: s.Lock, What: c.Where(), Count: "1 of 1 in this run", Command: c.Command, StoryName: c.Story, Text: c.Text})
		}
		if h := s.Hunt; h != nil && h.Found && h.Baseline != "" && h.NotCounted == "" {
			p := promise.Exclusion
			if sc := h.found(); sc != nil {
				p = sc.Tests
			}
			add(s, p, Shown{Subject: s.Name, Lock: s.Lock, What: "its hunt (worse than " + h.Baseline + ")", Count: h.Reproduced, Command: h.Command, Text: h.Summary, Story: h.Story})
		}
	}
	slices.SortStableFunc(out, func(a, b Defect) int {
		return cmp.Or(strings.Compare(a.Library, b.Library), strings.Compare(string(a.Property), string(b.Property)))
	})
	for i := range out {
		out[i].Replay = r.replayOf(out[i].Slug())
	}
	return out
}

// Title is the defect in one line: its write-up's, in the library's own
// terms, else "redis-lock: breaks its promise of a release checked
// against its own token".
func (d Defect) Title() string {
	if d.Writeup != nil {
		return d.Writeup.Title
	}
	return fmt.Sprintf("%s: breaks its promise of %s", d.Library, d.Property.Says())
}

// Slug names the defect's report: "tooz-renewal-memcached" (the lock it
// is in, where the library's rows play several servers).
func (d Defect) Slug() string {
	s := d.Library + "-" + string(d.Property)
	if d.Part != "" {
		s += "-" + d.Part
	}
	return s
}

// Whose is the library the defect lives in: its write-up's, else the
// library's name on the page.
func (d Defect) Whose() string {
	if d.Writeup != nil {
		return d.Writeup.Whose
	}
	return d.Library
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
