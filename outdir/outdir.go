// Package outdir is the one place locksim claims and writes its output
// directories. A directory is locksim's when its marker (locksim.json)
// says so: the marker names the kind of output and lists every entry
// locksim wrote there, so a directory holding anything else (the user's
// notes.txt, or a result.json locksim did not write) is refused, never
// written into.
package outdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// MarkerName is the marker's file name. It is not a dot file, so that a
// run directory uploaded as a CI artifact (upload-artifact leaves hidden
// files out) keeps it and can be reported again on a laptop.
const MarkerName = "locksim.json"

// The files of a run directory (Run) that other commands read back:
// written by runner and reports, read by sim check, sim report, a
// matrix's pages and sim cost.
const (
	// HistoryFile is the run's history, one event per line.
	HistoryFile = "history.jsonl"
	// ResultFile is the run's verdict and its checkers' findings.
	ResultFile = "result.json"
)

// Version is the marker's format version.
const Version = 1

// Kind is what locksim keeps in a directory.
type Kind string

// The kinds of output directory.
const (
	// Run is one run: history.jsonl, result.json, report.html...
	Run Kind = "run"
	// Runs is a parent of several runs (several scenarios, --repeat,
	// a matrix's lock, a hunt's candidates).
	Runs Kind = "runs"
	// Matrix is sim matrix's DIR/<lock>/<scenario> tree.
	Matrix Kind = "matrix"
	// Sweep is sim sweep's (or sim sweep merge's) sweep.csv and plots.
	Sweep Kind = "sweep"
	// Hunt is sim hunt's (or sim hunt merge's) hunt.json and stories.
	Hunt Kind = "hunt"
	// Cost is sim cost's cost.csv, cost.json and cost.png.
	Cost Kind = "cost"
)

// Marker is the content of locksim.json.
type Marker struct {
	// Version is the marker's format version (Version).
	Version int `json:"version"`
	// Kind is what the directory holds.
	Kind Kind `json:"kind"`
	// ID names the output last written there (the run, its seed).
	ID string `json:"id"`
	// Entries are the names locksim wrote in the directory, sorted.
	Entries []string `json:"entries"`
}

// RefusedError is a directory, or a file, locksim will not write into.
type RefusedError struct {
	// Path is the directory or file refused.
	Path string
	// Why says what in it is not locksim's.
	Why string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %s", e.Path, e.Why)
}

// mu serializes every change of a marker in this process: concurrent
// writers (a sweep's, a run and its counterfactual) lose no entry.
var mu sync.Mutex

// Dir is a directory claimed by locksim: everything written through it is
// listed in its marker first.
type Dir struct {
	path string
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Check says whether locksim may claim dir as kind, writing nothing: a
// missing or empty directory, or one whose marker is of that kind and
// lists every entry (listed subdirectories are checked the same way).
func Check(dir string, kind Kind) error {
	mu.Lock()
	defer mu.Unlock()
	_, _, err := inspect(filepath.Clean(dir), kind)
	return err
}

// Claim makes dir locksim's output directory of kind: a missing one is
// created, an empty one gets its marker, a marked one of the same kind is
// taken when it holds nothing locksim did not write; anything else is a
// *RefusedError. id names what is written there now. When dir's parent is
// claimed, dir is listed in the parent's marker.
func Claim(dir string, kind Kind, id string) (*Dir, error) {
	mu.Lock()
	defer mu.Unlock()
	dir = filepath.Clean(dir)
	m, exists, err := inspect(dir, kind)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if m == nil {
		m = &Marker{Version: Version, Kind: kind, Entries: []string{}}
	}
	m.ID = id
	if err := writeMarker(dir, m); err != nil {
		return nil, err
	}
	if err := recordInParent(dir); err != nil {
		return nil, err
	}
	return &Dir{path: dir}, nil
}

// WriteFile writes data to the file name in d: listed in the marker, then
// written to a temp name and renamed, so that an interrupted run never
// leaves a half-written file.
func (d *Dir) WriteFile(name string, data []byte) error {
	if err := d.record(name); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(d.path, name), data)
}

// Create creates (or truncates) the file name in d for a streamed output
// (history.jsonl, a client's log, sweep.csv), once it is listed.
func (d *Dir) Create(name string) (*os.File, error) {
	if err := d.record(name); err != nil {
		return nil, err
	}
	return os.Create(filepath.Join(d.path, name))
}

// Sub claims d's subdirectory name as kind (listed in d's marker).
func (d *Dir) Sub(name string, kind Kind, id string) (*Dir, error) {
	return Claim(filepath.Join(d.path, name), kind, id)
}

// RemoveAll removes dir when it is locksim's (marked, holding nothing
// else) and takes it off its parent's marker; a directory that is not
// locksim's is left as it is and refused.
func RemoveAll(dir string) error {
	mu.Lock()
	defer mu.Unlock()
	dir = filepath.Clean(dir)
	m, exists, err := inspect(dir, "")
	switch {
	case err != nil:
		return err
	case !exists:
		return nil
	case m == nil:
		return &RefusedError{Path: dir, Why: "no marker: not removed, locksim did not make it"}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	pm, err := readMarker(parent)
	if err != nil || pm == nil {
		return err
	}
	pm.Entries = slices.DeleteFunc(pm.Entries, func(e string) bool { return e == filepath.Base(dir) })
	return writeMarker(parent, pm)
}

// record lists name in d's marker.
func (d *Dir) record(name string) error {
	if name == "" || name == MarkerName || strings.ContainsRune(name, filepath.Separator) {
		return fmt.Errorf("outdir: %q is not a name locksim writes", name)
	}
	mu.Lock()
	defer mu.Unlock()
	m, err := readMarker(d.path)
	if err != nil {
		return err
	}
	if m == nil {
		return &RefusedError{Path: d.path, Why: "its marker " + MarkerName + " is gone; claim it again"}
	}
	return add(d.path, m, name)
}

// add lists name in dir's marker m and writes it, unless listed already.
func add(dir string, m *Marker, name string) error {
	i, found := slices.BinarySearch(m.Entries, name)
	if found {
		return nil
	}
	m.Entries = slices.Insert(m.Entries, i, name)
	return writeMarker(dir, m)
}

// recordInParent lists dir in its parent's marker, when the parent has
// one.
func recordInParent(dir string) error {
	parent := filepath.Dir(dir)
	if parent == dir {
		return nil
	}
	pm, err := readMarker(parent)
	if err != nil || pm == nil {
		return err
	}
	return add(parent, pm, filepath.Base(dir))
}

// inspect reads dir's marker and checks dir may be claimed as kind (""
// any kind). It returns the marker (nil: none) and whether dir exists.
func inspect(dir string, kind Kind) (*Marker, bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	m, err := readMarker(dir)
	if err != nil {
		return nil, true, &RefusedError{Path: dir, Why: fmt.Sprintf("holds %s, which locksim cannot read (%v); name a new or empty directory", MarkerName, err)}
	}
	if m == nil {
		if len(entries) > 0 {
			return nil, true, foreign(dir, entries[0].Name())
		}
		return nil, true, nil
	}
	switch {
	case m.Version > Version:
		return nil, true, &RefusedError{Path: dir, Why: fmt.Sprintf("made by a newer locksim (marker version %d); name a new or empty directory", m.Version)}
	case kind != "" && m.Kind != kind:
		return nil, true, &RefusedError{Path: dir, Why: fmt.Sprintf("holds locksim's %s output, not a %s; name a new or empty directory, or one locksim made for a %s", m.Kind, kind, kind)}
	}
	if name, err := strayEntry(dir, m, entries); err != nil || name != "" {
		if err != nil {
			return nil, true, err
		}
		return nil, true, foreign(dir, name)
	}
	return m, true, nil
}

// strayEntry returns the first entry of dir (a path relative to dir,
// looking into the listed subdirectories) that locksim did not write ("":
// none).
func strayEntry(dir string, m *Marker, entries []fs.DirEntry) (string, error) {
	for _, e := range entries {
		name := e.Name()
		if name == MarkerName || isTemp(m, name) {
			continue
		}
		if _, listed := slices.BinarySearch(m.Entries, name); !listed {
			return name, nil
		}
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, name)
		subEntries, err := os.ReadDir(sub)
		if err != nil {
			return "", err
		}
		sm, err := readMarker(sub)
		if err != nil {
			return filepath.Join(name, MarkerName), nil
		}
		if sm == nil {
			if len(subEntries) > 0 {
				return filepath.Join(name, subEntries[0].Name()), nil
			}
			continue
		}
		stray, err := strayEntry(sub, sm, subEntries)
		if err != nil || stray != "" {
			return filepath.Join(name, stray), err
		}
	}
	return "", nil
}

// isTemp says whether name is locksim's own temp file of an entry listed
// in m (or of the marker): what an interrupted atomic write leaves.
func isTemp(m *Marker, name string) bool {
	base, _, ok := strings.Cut(strings.TrimPrefix(name, "."), ".tmp-")
	if !ok || !strings.HasPrefix(name, ".") {
		return false
	}
	_, listed := slices.BinarySearch(m.Entries, base)
	return listed || base == MarkerName
}

// foreign is the refusal of dir for holding name.
func foreign(dir, name string) error {
	return &RefusedError{Path: dir, Why: fmt.Sprintf("holds %s, which locksim did not write; name a new or empty directory, or one locksim made", name)}
}

// readMarker reads dir's marker (nil: dir has none).
func readMarker(dir string) (*Marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Version < 1 || m.Kind == "" {
		return nil, errors.New("no version or kind")
	}
	slices.Sort(m.Entries)
	return &m, nil
}

// writeMarker writes m into dir.
func writeMarker(dir string, m *Marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, MarkerName), append(b, '\n'))
}

// writeAtomic writes data to a temp file beside path and renames it into
// place: an interrupted write never leaves a half-written file.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
