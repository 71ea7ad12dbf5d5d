// Package matrix plans and plays sim matrix: every story against every
// lock of its servers, a cell each, so that a table says which locks each
// story catches and which stories each lock survives. It decides what
// each cell is (n/a, run with its outcome, a story that did not happen,
// not run) and says it in words; reports draws the table.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// Cell is one lock and one scenario: not applicable, not run, or run with
// its outcome.
type Cell struct {
	Lock, Scenario string
	// Played is the story as it is played with the cell's lock; nil when
	// NA says why it cannot be told with it.
	Played *scenarios.Scenario
	NA     string
	// Ran says the run ended with a verdict.
	Ran               bool
	Verdict, Expected checker.Verdict
	// Slow says the verdict is unknown because the machine was too slow.
	Slow bool
	// CF is the counterfactual's verdict ("": none ran), CFFlipped
	// whether it flipped; CFSkipped why it was not played, and
	// CFChangesLock whether that is because it changes the lock (which
	// means nothing for the cell's).
	CF            checker.Verdict
	CFFlipped     bool
	CFSkipped     string
	CFChangesLock bool
	// Story is how the run contradicted its story; Err a harness failure;
	// Interrupted says the run was cut short.
	Story, Err  string
	Interrupted bool
	// Dir is the run directory; Summary the checkers' sentence.
	Dir, Summary string
	Duration     time.Duration
	// Notice is what the run measured of its holder's time to notice
	// and of the overlap (checker.Notices); nil when it did not run.
	Notice *checker.Notice
	// Ref is the story as the reference lock plays it, when the cell's
	// lock stands in for another (it replaces the story's lock, or a
	// client program implements it): the cell is judged against that
	// lock, played on the same story, not against the story's expected
	// verdict. nil: judged by the story.
	Ref *scenarios.Scenario
	// RefVerdict is the reference's verdict, Worse whether the cell's
	// lock ended worse (a finding about it), Judged the sentence that
	// compares the two and names the first step where they parted.
	RefVerdict checker.Verdict
	Worse      bool
	Judged     string
	// AsCounterfactual is the story's counterfactual, in words, when the
	// cell's lock is the one that counterfactual plays (its only change:
	// zookeeper on zookeeper-lock-delay, the story's defence taken away):
	// the cell plays that counterfactual and is judged by its expected
	// verdict, not against the story's lock. "" otherwise.
	AsCounterfactual string
	// Peer says the cell's lock stands in for no other (one of locksim's
	// references) and is judged against another reference, the story's
	// lock (postgres-session on postgres-xact's story): ending worse is
	// what that lock's design adds, another verdict, not a finding.
	Peer bool
	// Fixed says the servers have the story's bug fixed (runner.Outcome's
	// Fixed, "etcd 3.5"), on Version ("3.7.3"): the cell was expected to
	// end safe.
	Fixed, Version string
}

// Matrix is the table: the scenarios (rows), the locks (columns), the
// cells by lock and scenario.
type Matrix struct {
	Locks     []string
	Scenarios []*scenarios.Scenario
	Cells     map[[2]string]*Cell
	// Refs are the reference runs played so far, by RefKey: each is
	// played once and judges every cell that stands in for its lock on
	// its story. A caller may fill it from another matrix's.
	Refs map[string]*runner.Outcome
}

// RefKey is the key in Refs of lock's run of scenario, its clients
// running watchdog ("" none): a reference played with a watchdog, for a
// lock that renews by itself, judges only the cells it was played for.
func RefKey(lock, watchdog, scenario string) string {
	if watchdog != "" {
		lock += "+watchdog:" + watchdog
	}
	return lock + "/" + scenario
}

// Cell is the cell of lock and scenario.
func (m *Matrix) Cell(lock, scenario string) *Cell { return m.Cells[[2]string{lock, scenario}] }

// Ordered lists the cells in the order they run: lock by lock, each
// lock's scenarios in turn.
func (m *Matrix) Ordered() []*Cell {
	var out []*Cell
	for _, l := range m.Locks {
		for _, sc := range m.Scenarios {
			if c := m.Cell(l, sc.Name); c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// Playable lists the cells that can be played, in the order they run.
func (m *Matrix) Playable() []*Cell {
	var out []*Cell
	for _, c := range m.Ordered() {
		if c.Played != nil {
			out = append(out, c)
		}
	}
	return out
}

// Plan builds the table's cells, each with the story as it runs with its
// lock, in out/<lock>/<scenario>. With a client program (program, not
// nil: why it cannot play a story, runner.ClientProgramProblem), a story
// its hello does not cover is n/a, and a counterfactual it does not
// cover is skipped.
func Plan(locks []string, list []*scenarios.Scenario, out string, program func(*scenarios.Scenario) error) *Matrix {
	m := &Matrix{Locks: locks, Scenarios: list, Cells: map[[2]string]*Cell{}, Refs: map[string]*runner.Outcome{}}
	for _, l := range locks {
		for _, sc := range list {
			c := &Cell{Lock: l, Scenario: sc.Name, Expected: sc.Expected, Dir: filepath.Join(out, l, sc.Name)}
			m.Cells[[2]string{l, sc.Name}] = c
			if program == nil && l != sc.Lock && sc.CounterfactualLock() == l {
				// Judged against the story's lock, this lock would be
				// "worse" by the very defence the story adds to it.
				if cf, err := sc.CounterfactualScenario(); err == nil {
					c.Played, c.Expected, c.AsCounterfactual = cf, cf.Expected, sc.Counterfactual.Change
					c.CFSkipped = "the cell is the story's counterfactual"
					continue
				}
			}
			v, err := scenarios.WithLock(sc, l)
			var unplayable string // why the program cannot play the counterfactual
			if err == nil && program != nil {
				if err = program(v.Scenario); err == nil {
					v, unplayable = withoutCFUnplayable(v, program)
				}
			}
			if err != nil {
				c.NA = err.Error()
				continue
			}
			if sc.Counterfactual == nil {
				c.CFSkipped = "the scenario has none"
			}
			if v.SkipCF != "" {
				c.CFSkipped, c.CFChangesLock = v.SkipCF, true
			}
			if unplayable != "" {
				c.CFSkipped = unplayable
			}
			c.Played = v.Scenario
			if ref := scenarios.ReferenceFor(sc, l, program != nil); program != nil || (l != sc.Lock && l != ref) {
				if c.Ref, err = referenceOf(sc, ref, l); err != nil {
					c.Played, c.NA = nil, err.Error()
				}
				c.Peer = program == nil && standsAlone(l)
			}
		}
	}
	return m
}

// standsAlone says lock stands in for no other lock: one of locksim's
// references, neither like another nor a mutant of one.
func standsAlone(lock string) bool {
	spec, err := clients.Lookup(lock)
	return err == nil && spec.Like == "" && spec.MutantOf == ""
}

// referenceOf is sc as lock ref plays it for the stand-in lock, with the
// harness's own worker and no counterfactual, and with a token watchdog
// where the stand-in renews its leases by itself (clients.Spec's
// OwnWatchdog); nil when ref cannot play it (scenarios.NoReference).
func referenceOf(sc *scenarios.Scenario, ref, lock string) (*scenarios.Scenario, error) {
	if scenarios.NoReference(sc, ref) != "" {
		return nil, nil // judged against the story's expected verdict
	}
	ch := scenarios.Changes{Lock: ref, Reference: true}
	if spec, err := clients.Lookup(lock); err == nil && spec.OwnWatchdog != "" {
		ch.Watchdog = "token"
	}
	v, err := scenarios.Resolve(sc, ch)
	if err != nil {
		return nil, fmt.Errorf("the reference %s: %w", ref, err)
	}
	return v.Scenario, nil
}

// withoutCFUnplayable drops v's counterfactual, and says why, when the
// client program cannot play it (it changes the lock to one the program
// does not implement, say).
func withoutCFUnplayable(v scenarios.Variant, program func(*scenarios.Scenario) error) (scenarios.Variant, string) {
	if v.Scenario.Counterfactual == nil {
		return v, ""
	}
	cfs, err := v.Scenario.CounterfactualScenario()
	if err == nil {
		err = program(cfs)
	}
	if err == nil {
		return v, ""
	}
	why := "the client program cannot play it: " + err.Error()
	without, err := scenarios.Resolve(v.Scenario, scenarios.Changes{NoCounterfactual: true})
	if err != nil {
		return v, why + "; and without it: " + err.Error()
	}
	v.Scenario = without.Scenario
	return v, why
}

// PlayFunc plays a story and writes its run directory (runner.Run and the
// reports).
type PlayFunc func(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error)

// Play plays every cell that can be played, one after another, each with
// its counterfactual where it has one, into the cell's directory, with
// o's client program and backend and seed. Once ctx ends, the cells left
// are marked interrupted. done is called after each cell played, with how
// many have been and how many there are.
//
// The cells judged by their story play first, so that a reference lock's
// own cell is the reference run of the cells that stand in for it; a
// reference not in the table is played once, into the directory of the
// first cell that needs it (Options.Reference), and kept in Refs.
func (m *Matrix) Play(ctx context.Context, play PlayFunc, o runner.Options, done func(n, total int, c *Cell)) {
	cells := m.Playable()
	byStory := slices.DeleteFunc(slices.Clone(cells), func(c *Cell) bool { return c.Ref != nil })
	judged := slices.DeleteFunc(slices.Clone(cells), func(c *Cell) bool { return c.Ref == nil })
	for i, c := range append(byStory, judged...) {
		if ctx.Err() != nil {
			c.Interrupted = true
			continue
		}
		started := time.Now()
		co := o
		co.Out, co.Counterfactual = c.Dir, c.Played.Counterfactual != nil
		var ref *runner.Outcome
		if c.Ref != nil {
			co.Departures = true
			if ref = m.Refs[RefKey(c.Ref.Lock, c.Ref.Watchdog, c.Scenario)]; ref == nil {
				co.Reference = c.Ref
			}
		}
		res, err := play(ctx, c.Played, co)
		if err == nil && res != nil && ref != nil {
			res.JudgeAgainst(ref)
		}
		c.Duration = time.Since(started)
		c.record(res, err, ctx.Err() != nil)
		m.keepReference(c, res, err)
		if done != nil {
			done(i+1, len(cells), c)
		}
	}
}

// keepReference keeps in Refs the run that can judge others: a cell's
// own run when its lock is the reference of its story, or the reference
// run a judged cell played.
func (m *Matrix) keepReference(c *Cell, res *runner.Outcome, err error) {
	switch {
	case err != nil || res == nil:
	case c.Ref == nil && res.Departed == nil && len(res.ClientCmd) == 0:
		m.Refs[RefKey(c.Lock, c.Played.Watchdog, c.Scenario)] = res
	case res.Reference != nil && res.Reference.Run != nil && res.Reference.Verdict != "":
		m.Refs[RefKey(res.Reference.Lock, c.Ref.Watchdog, c.Scenario)] = res.Reference.Run
	}
}

// record fills in the cell's outcome from its run.
func (c *Cell) record(res *runner.Outcome, err error, interrupted bool) {
	var story *runner.StoryError
	switch {
	case err != nil && interrupted:
		c.Interrupted = true
	case errors.As(err, &story):
		c.Story = fmt.Sprintf("step %d (%s): %s", story.Step, story.Claimed, story.Saw)
	case err != nil:
		c.Err = strings.Join(strings.Fields(err.Error()), " ")
	default:
		c.Ran = true
		c.Verdict, c.Expected, c.Summary = res.Check.Verdict, res.Expected, res.Check.Summary
		n := res.Check.Notice
		c.Notice = &n
		c.Slow = res.Check.Verdict == checker.Unknown && res.Machine != nil && res.Machine.Busy != ""
		if cf := res.Counterfactual; cf != nil {
			c.CF, c.CFFlipped = cf.Verdict, cf.Flipped
		}
		if c.Fixed = res.Fixed; c.Fixed != "" {
			b, _, _ := strings.Cut(c.Fixed, " ")
			c.Version = res.Versions[b]
		}
		if r := res.Reference; r != nil {
			c.RefVerdict, c.Worse, c.Judged = r.Verdict, r.Worse, r.Sentence(res)
			if c.Peer && r.Worse {
				c.Judged = r.Parted(res) // no "finding about" it: where the two parted
			}
		}
	}
}

// Failed is the first cell the harness could not run, nil when every
// cell ran.
func (m *Matrix) Failed() *Cell {
	for _, c := range m.Ordered() {
		if c.Err != "" {
			return c
		}
	}
	return nil
}

// Kinds of cell, for the HTML page's colours and the legend.
const (
	KindMatch   = cellkind.Match
	KindDiffers = cellkind.Differs
	KindFinding = cellkind.Finding
	// KindPeer is a reference lock that ended worse than the story's own
	// lock, another reference (Cell.Peer): what that design adds.
	KindPeer    = cellkind.Peer
	KindStory   = cellkind.Story
	KindUnknown = cellkind.Unknown
	KindNA      = cellkind.NA
	KindError   = cellkind.Error
)

// Kinds lists the kinds of cell, each with its words in the tally and
// the legend.
var Kinds = []struct{ Kind, Words string }{
	{KindMatch, "as expected"}, {KindDiffers, "another verdict"}, {KindFinding, "worse than the reference: a finding"},
	{KindPeer, "worse than the story's lock, another reference: what its design adds"}, {KindStory, "story did not happen"},
	{KindUnknown, "unknown"}, {KindError, "not run"}, {KindNA, "n/a"},
}

// Kind is what the cell came to.
func (c *Cell) Kind() string {
	switch {
	case c.NA != "":
		return KindNA
	case c.Err != "" || c.Interrupted:
		return KindError
	case c.Story != "":
		return KindStory
	case c.Verdict == checker.Unknown || (c.Ref != nil && c.RefVerdict == checker.Unknown):
		return KindUnknown
	case c.Ref != nil && c.Worse && c.Peer:
		return KindPeer
	case c.Ref != nil && c.Worse:
		return KindFinding
	case c.Ref != nil, c.Verdict == c.Expected:
		return KindMatch
	}
	return KindDiffers
}

// Text is the cell in words, its reasons cut to width (0: whole) at a
// word's end, with an ellipsis.
func (c *Cell) Text(width int) string {
	cut := func(s string) string {
		r := []rune(s)
		if width <= 0 || len(r) <= width {
			return s
		}
		head := string(r[:width-1])
		if r[width-1] != ' ' { // the cut falls in a word: drop it
			if i := strings.LastIndexByte(head, ' '); i > 0 {
				head = head[:i]
			}
		}
		return strings.TrimRight(head, " ,;:") + "…"
	}
	switch c.Kind() {
	case KindNA:
		if width == 0 {
			return "n/a: " + c.NA
		}
		return "n/a"
	case KindError:
		if c.Interrupted {
			return "not run (interrupted)"
		}
		return "error: " + cut(c.Err)
	case KindStory:
		return "story did not happen: " + cut(c.Story)
	case KindFinding:
		if width > 0 {
			return cut(fmt.Sprintf("finding: %s where the reference %s ended %s", c.Verdict, c.Ref.Lock, c.RefVerdict))
		}
		return "finding: " + c.Judged
	}
	var s string
	switch c.Kind() {
	case KindUnknown:
		s = "unknown"
		if c.Slow {
			s += " (machine too slow)"
		}
		if c.Ref != nil && width == 0 {
			s += "; " + c.Judged
		}
	case KindMatch:
		if c.AsCounterfactual != "" {
			s = string(c.Verdict) + ", as the story's counterfactual expects: " + c.AsCounterfactual
			if c.Fixed != "" {
				s += "; " + c.FixedWords()
			}
			return s
		}
		if c.Ref != nil {
			s = string(c.Verdict) + ", as good as the reference " + c.Ref.Lock + c.cfText()
			if width == 0 {
				s += "; " + c.Judged
			}
			return s
		}
		s = string(c.Verdict) + ", as expected"
		if c.Fixed != "" {
			s += ": " + c.FixedWords()
		}
	case KindPeer:
		s = fmt.Sprintf("%s where %s, the story's lock, ended %s: what its design adds, not a finding (%s stands in for no other lock)", c.Verdict, c.Ref.Lock, c.RefVerdict, c.Lock)
		if width == 0 && c.Judged != "" {
			s += "; " + c.Judged
		}
		return cut(s)
	default:
		s = string(c.Verdict) + ", NOT " + string(c.Expected)
		if c.AsCounterfactual != "" {
			s += " (the story's counterfactual: " + c.AsCounterfactual + ")"
		}
	}
	return s + c.cfText()
}

// FixedWords says that the cell's run shows the story's bug fixed: "fixed
// in etcd 3.5+, as the run on 3.7.3 shows".
func (c *Cell) FixedWords() string {
	return fmt.Sprintf("fixed in %s+, as the run on %s shows", c.Fixed, c.Version)
}

// cfText is the counterfactual's part of a cell: "; cf safe".
func (c *Cell) cfText() string {
	switch {
	case c.CF != "" && c.CFFlipped:
		return "; cf " + string(c.CF)
	case c.CF != "":
		return "; cf " + string(c.CF) + " (no flip)"
	case c.CFChangesLock:
		return "; cf skipped (it changes the lock)"
	}
	return ""
}

// Tally counts the cells by kind, in words.
func (m *Matrix) Tally() string {
	n := map[string]int{}
	for _, c := range m.Cells {
		n[c.Kind()]++
	}
	var parts []string
	for _, k := range Kinds {
		if n[k.Kind] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k.Kind], k.Words))
		}
	}
	return fmt.Sprintf("%d cell(s): %s", len(m.Cells), strings.Join(parts, ", "))
}
