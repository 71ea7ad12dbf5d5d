// writeup.go: a defect's hand-checked write-up (docs/findings/defects/
// LIBRARY-PROPERTY.yaml): its title in the library's own terms, whose
// defect it is, where in the code, the newest release, the fix and the
// upstream issue. A write-up is checked against one run of its rows; a
// row played after that is not covered by it, and the page says so
// instead of showing it.

package findings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/promise"
)

// Writeup is what a person checked of one defect, by hand, in the
// library's code and docs at the version played.
type Writeup struct {
	// Library and Property name the defect (Defect's); Lock, when set,
	// limits it to one of the program's locks (a tooz driver).
	Library  string           `yaml:"library"`
	Property promise.Property `yaml:"property"`
	Lock     string           `yaml:"lock,omitempty"`
	// Title is the defect in one line, in the library's own terms.
	Title string `yaml:"title"`
	// Whose is the library the defect lives in, with its version (a bug
	// of Kazoo's shown through tooz is Kazoo's).
	Whose string `yaml:"whose"`
	// Where is the code that does it, at the version played (an address
	// with its lines); Newest says whether the newest release still has
	// it ("not checked" when nobody read it).
	Where  string `yaml:"where"`
	Newest string `yaml:"newest"`
	// Fix is the fix in a sentence or two; Upstream an issue about it.
	Fix      string `yaml:"fix"`
	Upstream string `yaml:"upstream,omitempty"`
	// Checked is the date (YYYY-MM-DD) of the rows' run it was checked
	// against.
	Checked string `yaml:"checked"`
	// Repro, when set, is a standalone reproduction in the library's own
	// language, using only the library and the server (a path under
	// docs/findings/repro/), and Ran what it printed when it was run to
	// show it fails, with the date.
	Repro string `yaml:"repro,omitempty"`
	Ran   string `yaml:"ran,omitempty"`
	// File is where it was read from.
	File string `yaml:"-"`
}

// LoadWriteups reads every write-up in dir (*.yaml); none when dir does
// not exist. A file with an unknown field, a property outside the set or
// a field left out is an error naming the file.
func LoadWriteups(dir string) ([]Writeup, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []Writeup
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var w Writeup
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&w); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		w.File = f
		if err := w.check(); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// check says what the write-up lacks.
func (w Writeup) check() error {
	if _, err := promise.Parse(string(w.Property)); err != nil {
		return fmt.Errorf("property: %v", err)
	}
	for _, f := range []struct{ name, v string }{{"library", w.Library}, {"title", w.Title}, {"whose", w.Whose}, {"where", w.Where}, {"newest", w.Newest}, {"fix", w.Fix}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("%s: missing", f.name)
		}
	}
	if (w.Repro == "") != (w.Ran == "") {
		return fmt.Errorf("repro and ran: give both (a reproduction, and what it printed when it was run), or neither")
	}
	if _, err := time.Parse(time.DateOnly, w.Checked); err != nil {
		return fmt.Errorf("checked: expected the date of the run it was checked against (YYYY-MM-DD), got %q", w.Checked)
	}
	return nil
}

// covers says the write-up is of defect d.
func (w Writeup) covers(d Defect) bool {
	if w.Library != d.Library || w.Property != d.Property {
		return false
	}
	return w.Lock == "" || slices.ContainsFunc(d.Shown, func(s Shown) bool { return s.Lock == w.Lock })
}

// Attach gives each of the report's defects its write-up, where one
// covers it: a write-up checked against an earlier run than the newest
// row it covers is refused (Defect.Stale says so), for it vouches for
// runs it did not see.
func (r *Report) Attach(ws []Writeup) {
	for i := range r.defects {
		d := &r.defects[i]
		d.Writeup, d.Stale = nil, ""
		for _, w := range ws {
			if !w.covers(*d) {
				continue
			}
			if newest := r.newestRow(*d); newest > w.Checked {
				d.Stale = fmt.Sprintf("its write-up (%s) was checked against the run of %s; the row was played %s", filepath.Base(w.File), w.Checked, newest)
				continue
			}
			d.Writeup = &w
			break
		}
	}
}

// newestRow is the newest date of the rows that show d.
func (r *Report) newestRow(d Defect) string {
	newest := ""
	for _, s := range r.Subjects {
		if slices.ContainsFunc(d.Shown, func(sh Shown) bool { return sh.Subject == s.Name }) && s.Date > newest {
			newest = s.Date
		}
	}
	return newest
}
