// Package findings is what sim findings learns about each lock it can
// play: every registered lock, and every lock of every client program
// under examples/. For each (a subject) it keeps the stories of its
// servers as sim matrix played them, judged against the lock each stands
// in for, and what a hunt told nothing but its name found. It renders
// docs/findings.md and findings.html, and keeps findings.json so that
// `sim findings --only NAME` can refresh one subject and leave the rest.
package findings

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/cost"
	"github.com/locksim/locksim/promise"
)

// WrittenBy marks a findings.json locksim wrote, so that a refresh never
// overwrites a user's file of the same name.
const WrittenBy = "locksim findings"

// Report is every subject's findings and how they were made.
type Report struct {
	WrittenBy string `json:"written_by"`
	// Command rebuilds the report; Seed is its runs' seed.
	Command string `json:"command"`
	Seed    int64  `json:"seed"`
	// Modules are the Go modules of the registered locks, with their
	// versions, as the binary was built with them.
	Modules []string `json:"modules"`
	// Machine says where it ran (cores, the servers' versions).
	Machine string `json:"machine"`
	// Shard is I/N on the page of one shard of a sharded run (sim
	// findings --shard), which sim findings merge joins; empty otherwise.
	Shard    string    `json:"shard,omitempty"`
	Subjects []Subject `json:"subjects"`
	// Cost is the sim cost run whose figures give each subject its cost
	// line (sim findings cost DIR), as its cost.json holds them, without
	// its chart's marks; nil: none.
	Cost *cost.Result `json:"cost,omitempty"`
	// Replays are the defects' k of n (sim findings replay), by slug;
	// a page played again keeps them.
	Replays []Replay `json:"replays,omitempty"`
	// defects are the report's defects as Judge last grouped them, which
	// the page opens with; newest the libraries' newest releases
	// (SetNewest).
	defects []Defect
	newest  []Newest
}

// Subject is one lock: a registered lock, or a client program's lock.
type Subject struct {
	// Name is the registered lock's name, or the program's folder under
	// examples/ with the lock it plays ("node-redlock (redlock)").
	Name string `json:"name"`
	// Lock is the catalogue lock it plays the stories of; Program the
	// client program's argv (nil: locksim's own Go lock).
	Lock    string   `json:"lock"`
	Program []string `json:"program,omitempty"`
	// About says what it is, with its library's version: the program's
	// hello name, or the registered lock's description.
	About   string `json:"about"`
	Servers string `json:"servers"`
	// Date is when it was last played (YYYY-MM-DD).
	Date  string `json:"date"`
	Cells []Cell `json:"cells"`
	Hunt  *Hunt  `json:"hunt,omitempty"`
	// Seconds is how long its stories and its hunt took.
	Seconds float64 `json:"seconds"`
	// Promises are the properties its lock promises, in its library's
	// own words (clients.Spec.Promises, or the program's hello): a story
	// counts against it only where it promises what the story tests.
	Promises promise.Set `json:"promises,omitempty"`
	// Patched says how the program plays its library as no release
	// installs it (its hello's patched): nothing of it is counted.
	Patched string `json:"patched,omitempty"`
	// Load is the highest 1-minute load average seen while it played,
	// on a machine of Cores cores (0: not recorded).
	Load  float64 `json:"load,omitempty"`
	Cores int     `json:"cores,omitempty"`
}

// Named says whether n names s, as --only and --report take a name: its
// page name ("node-redlock (redlock)"), its registered lock's name (for
// locksim's own locks) or its program's folder under examples/.
func (s Subject) Named(n string) bool {
	if s.Program == nil {
		return s.Name == n || s.Lock == n
	}
	return s.Name == n || filepath.Base(filepath.Dir(s.Program[len(s.Program)-1])) == n
}

// Busy says the subject played on a machine busier than its cores: its
// timings, and so its unknown cells, are not an idle machine's.
func (s Subject) Busy() bool { return busy(s.Load, s.Cores) }

// busy says a load average is above a machine's cores (0 cores: not
// recorded, never busy).
func busy(load float64, cores int) bool { return cores > 0 && load > float64(cores) }

// Cell is one story as the subject played it.
type Cell struct {
	Story string `json:"story"`
	// Kind is matrix's kind of cell (match, finding, differs, story,
	// unknown, error, na); Text the cell in words, whole.
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Command plays the cell again.
	Command string `json:"command"`
	// Notice is what its run measured of the holder's time to notice
	// and of the overlap (Subject.Measures reads it); nil when it did
	// not run, or was played before this was measured.
	Notice *checker.Notice `json:"notice,omitempty"`
	// Server is the server and its version the story was played on
	// ("etcd 3.7.3"), for servers that come in several versions here;
	// "" for the others.
	Server string `json:"server,omitempty"`
	// Fixed says the server has the story's bug fixed ("etcd 3.5": the
	// story's fixed_in), and the cell was expected to end safe.
	Fixed string `json:"fixed,omitempty"`
	// WasKind and WasText are the cell as it was played, when Judge put
	// another kind in its place (KindUnrealistic, KindUnpromised).
	WasKind string `json:"was_kind,omitempty"`
	WasText string `json:"was_text,omitempty"`
}

// Hunt is what sim hunt found against the subject.
type Hunt struct {
	Command string `json:"command"`
	// Baseline is the lock a finding had to leave safe: the lock the
	// subject stands in for ("" for a lock that stands in for none).
	Baseline string  `json:"baseline,omitempty"`
	Found    bool    `json:"found"`
	Summary  string  `json:"summary,omitempty"`
	Runs     int     `json:"runs"`
	Seconds  float64 `json:"seconds"`
	// Story is the shrunk story (found.yaml) when it found one; Error
	// why the hunt could not run.
	Story string `json:"story,omitempty"`
	Error string `json:"error,omitempty"`
	// Reproduced says how often the shrunk story, played again, ended
	// unsafe as it tells ("reproduced 3 of 3": hunt.Result's
	// ReproducedLine), when it found one; "" when it found none, or was
	// played before this was kept.
	Reproduced string `json:"reproduced,omitempty"`
	// Unsteady says a find whose shrunk story, played again, did not
	// reproduce as often as sim hunt asks of a finding (hunt.MustBreak
	// of hunt.Plays): "reproduced 0 of 3: unsafe: ..."; the hunt then
	// counts as finding nothing (Found false).
	Unsteady string `json:"unsteady,omitempty"`
	// Trap names what a hunt with no baseline found when its shrunk story
	// is a catalogue story's schedule that every lock without fencing
	// shares ("the pause past the TTL, the schedule of
	// redlock-pause-after-acquire"): a fact about such locks, not about
	// this one. "" when it is not.
	Trap string `json:"trap,omitempty"`
	// Schedule says, for a find that is no Trap, the faults of its
	// shrunk story ("clock-jump on A (+315ms; jump 0.63 TTL) once client
	// 1 is granted"): what the page names it by.
	Schedule string `json:"schedule,omitempty"`
	// ToldBy is, for a find with no baseline that is no Trap, the
	// catalogue story whose schedule it is (scenarios.TellerOf); Untold
	// says no catalogue story tells it. Both unset: not looked for (a row
	// played before they were kept).
	ToldBy string `json:"told_by,omitempty"`
	Untold bool   `json:"untold,omitempty"`
	// Server is the server and version it hunted on ("etcd 3.4.23"), as
	// Cell.Server.
	Server string `json:"server,omitempty"`
	// NotCounted says why a find does not count against the subject
	// (Judge: its shrunk story tests a property the lock does not
	// promise, or its fault is outside what real machines have); "" when
	// it counts, or found nothing.
	NotCounted string `json:"not_counted,omitempty"`
}

// KindUnrealistic is a cell that would be a finding (cellkind.Finding),
// from a story whose fault is a form no real machine has
// (scenarios.Scenario.Unrealistic): it teaches, and is not counted against
// the library.
const KindUnrealistic = "unrealistic"

// Count is how many of s's cells are of kind.
func (s Subject) Count(kind string) int {
	n := 0
	for _, c := range s.Cells {
		if c.Kind == kind {
			n++
		}
	}
	return n
}

// Played is how many of s's stories were played: its cells but the n/a.
func (s Subject) Played() int { return len(s.Cells) - s.Count(cellkind.NA) }

// storiesOf lists the stories of s's cells of kind, each with its server
// where it names one ("etcd-pause on etcd 3.7.3").
func (s Subject) storiesOf(kind string) []string {
	var out []string
	for _, c := range s.Cells {
		if c.Kind == kind {
			out = append(out, c.Where())
		}
	}
	return out
}

// Where is the cell's story, with its server where it names one.
func (c Cell) Where() string {
	if c.Server == "" {
		return c.Story
	}
	return c.Story + " on " + c.Server
}

// ServersLine says what the subject's stories ran on: its backend, with
// the versions its cells name ("etcd 3.4.23, 3.6.17 and 3.7.3").
func (s Subject) ServersLine() string {
	var versions []string
	for _, c := range s.Cells {
		if _, v, ok := strings.Cut(c.Server, " "); ok && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return s.Servers
	}
	return s.Servers + " " + AndList(versions)
}

// fixedSentences say, for each story whose bug a later server version
// fixed, on which versions it ended as the fix says and how it ended on
// the others: "etcd-x's bug is fixed in etcd 3.5+, as the runs on 3.6.17
// and 3.7.3 show (it ended unsafe on etcd 3.4.23)."
func (s Subject) fixedSentences() []string {
	var out []string
	for _, c := range s.Cells {
		if c.Fixed == "" || c.Kind != cellkind.Match || slices.ContainsFunc(out, func(o string) bool { return strings.HasPrefix(o, c.Story+"'s ") }) {
			continue
		}
		var shows, before []string
		for _, o := range s.Cells {
			if o.Story != c.Story {
				continue
			}
			_, v, _ := strings.Cut(o.Server, " ")
			switch {
			case o.Fixed != "" && o.Kind == cellkind.Match:
				shows = append(shows, v)
			case o.Fixed == "" && o.Kind != cellkind.NA:
				before = append(before, o.verdictWord()+" on "+o.Server)
			}
		}
		runs := "the run on " + AndList(shows) + " shows"
		if len(shows) > 1 {
			runs = "the runs on " + AndList(shows) + " show"
		}
		line := fmt.Sprintf("%s's bug is fixed in %s+, as %s", c.Story, c.Fixed, runs)
		if len(before) > 0 {
			line += " (it ended " + AndList(before) + ")"
		}
		out = append(out, line+". ")
	}
	return out
}

// verdictWord is the verdict the cell's text begins with ("unsafe"), or
// its kind when it has none.
func (c Cell) verdictWord() string {
	w, _, _ := strings.Cut(c.Text, ",")
	if w == "" || strings.Contains(w, " ") {
		return c.Kind
	}
	return w
}

// AndList joins xs as a sentence does: "a", "a and b", "a, b and c".
func AndList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// Meaning says, in a few sentences, what the cells and the hunt mean for
// the subject's users. It says only what the runs showed.
func (s Subject) Meaning() string {
	var b strings.Builder
	played := s.Played()
	worse := s.storiesOf(cellkind.Finding)
	on := ""
	if line := s.ServersLine(); line != s.Servers {
		on = " on " + line
	}
	switch {
	case played == 0:
		b.WriteString("No story of its servers could be played with it. ")
	case len(worse) > 0:
		fmt.Fprintf(&b, "Of %d stories played%s, it ended worse than the lock it stands in for on %d: %s. Each is a finding about it: the same faults leave the reference safe. ",
			played, on, len(worse), strings.Join(worse, ", "))
	case s.Program == nil && s.Count(cellkind.Match) == played:
		fmt.Fprintf(&b, "Of %d stories played%s, every one ended as the story (or its reference) expects. ", played, on)
	default:
		fmt.Fprintf(&b, "Of %d stories played%s, none ended worse than the lock it stands in for. ", played, on)
	}
	for _, f := range s.fixedSentences() {
		b.WriteString(f)
	}
	if u := s.storiesOf(KindUnrealistic); len(u) > 0 {
		fmt.Fprintf(&b, "It also ended worse on %s, whose fault is outside what real machines have (each cell says how): that teaches, and is not counted. ",
			strings.Join(u, ", "))
	}
	if u := s.storiesOf(KindUnpromised); len(u) > 0 {
		fmt.Fprintf(&b, "It ended worse on %s, each testing a property it does not promise (each cell says which): shown, and not counted. ",
			strings.Join(u, ", "))
	}
	if p := s.storiesOf(cellkind.Peer); len(p) > 0 {
		fmt.Fprintf(&b, "It ended worse than the story's own lock, another of locksim's references, on %s: what that lock's design adds, not a finding about this one. ", strings.Join(p, ", "))
	}
	if d := s.storiesOf(cellkind.Differs); len(d) > 0 {
		fmt.Fprintf(&b, "Its own stories ended otherwise than they tell on %s. ", strings.Join(d, ", "))
	}
	if na := s.Count(cellkind.NA); na > 0 {
		fmt.Fprintf(&b, "%d stor%s could not be played with it (each cell says why). ", na, plural(na, "y", "ies"))
	}
	hunt := "The hunt"
	if h := s.Hunt; h != nil && h.Server != "" {
		hunt += " (on " + h.Server + ")"
	}
	switch h := s.Hunt; {
	case h == nil:
	case h.Error != "":
		fmt.Fprintf(&b, "%s could not run: %s.", hunt, h.Error)
	case h.Found && h.Baseline != "" && h.NotCounted != "":
		fmt.Fprintf(&b, "%s, with %s (the lock it stands in for) as its baseline, found a schedule on which it ends worse than that lock in %d candidate(s): %s. Not counted: %s.", hunt, h.Baseline, h.Runs, h.Summary, h.NotCounted)
	case h.Found && h.Baseline != "":
		fmt.Fprintf(&b, "%s, with %s (the lock it stands in for) as its baseline, found a schedule on which it ends worse than that lock in %d candidate(s): %s.", hunt, h.Baseline, h.Runs, h.Summary)
	case h.Found && h.Trap != "":
		fmt.Fprintf(&b, "%s found %s in %d candidate(s): every lock whose holder trusts its lease shares it, so it says nothing about this lock in particular; a fencing token protects the data from it, not the exclusion (%s).", hunt, h.Trap, h.Runs, h.Summary)
	case h.Found && h.ToldBy != "":
		fmt.Fprintf(&b, "%s found, in %d candidate(s), the schedule the catalogue story %s tells: %s.", hunt, h.Runs, h.ToldBy, h.Summary)
	case h.Found && h.Untold:
		fmt.Fprintf(&b, "%s found, in %d candidate(s), a schedule that breaks it and that no catalogue story tells: %s.", hunt, h.Runs, h.Summary)
	case h.Found:
		fmt.Fprintf(&b, "%s found a schedule that breaks it in %d candidate(s): %s.", hunt, h.Runs, h.Summary)
	case h.Unsteady != "":
		fmt.Fprintf(&b, "%s found one violation in %d candidate(s) that its replays did not hold (%s): this machine's timing now and then, not counted.", hunt, h.Runs, h.Unsteady)
	case h.Baseline != "":
		fmt.Fprintf(&b, "%s, with %s (the lock it stands in for) as its baseline, found no schedule on which it ends worse than that lock in %d candidate(s) (%.0f s).", hunt, h.Baseline, h.Runs, h.Seconds)
	default:
		fmt.Fprintf(&b, "%s found nothing in %d candidate(s) (%.0f s).", hunt, h.Runs, h.Seconds)
	}
	return strings.TrimSpace(b.String())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Replace puts subs in place of the report's subjects of the same name
// (a refresh with --only), adding those it had not, in name order. A
// subject played on a busy machine (Subject.Busy) never replaces one
// played idle: it is kept out, and named in kept.
func (r *Report) Replace(subs []Subject) (kept []string) {
	for _, s := range subs {
		if i := slices.IndexFunc(r.Subjects, func(o Subject) bool { return o.Name == s.Name }); i >= 0 {
			if o := r.Subjects[i]; s.Busy() && o.Cores > 0 && !o.Busy() {
				kept = append(kept, fmt.Sprintf("%s (played at load %.1f on %d cores; the page keeps its idle row of %s)", s.Name, s.Load, s.Cores, o.Date))
				continue
			}
			r.Subjects[i] = s
		} else {
			r.Subjects = append(r.Subjects, s)
		}
	}
	slices.SortStableFunc(r.Subjects, func(a, b Subject) int {
		if (a.Program == nil) != (b.Program == nil) { // locksim's locks first
			if a.Program == nil {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return kept
}

// Load reads findings.json at path: an empty report when there is none;
// an error when the file is not one locksim wrote.
func Load(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &Report{WrittenBy: WrittenBy}, nil
	}
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil || r.WrittenBy != WrittenBy {
		return nil, fmt.Errorf("%s: not a findings.json locksim wrote (expected \"written_by\": %q); name another --doc", path, WrittenBy)
	}
	for _, s := range r.Subjects { // written before hunts named their baseline
		if h := s.Hunt; h != nil && h.Baseline == "" && s.Program != nil {
			h.Baseline = s.Lock
		}
	}
	return &r, nil
}

// JSON is the report as findings.json holds it.
func (r *Report) JSON() ([]byte, error) {
	r.WrittenBy = WrittenBy
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}
