package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// Outcome is one run's record: the history, what the checkers found in
// it, and the facts of the run. The runner returns it, the reports write
// it: result.json is an Outcome with the fields derived from it
// (reports.Result embeds it), and reports.LoadRun reads one back. The
// JSON names are result.json's.
type Outcome struct {
	Scenario *scenarios.Scenario `json:"-"`
	// Dir is the run directory, holding history.jsonl and the clients' logs.
	Dir string `json:"-"`
	// Expected is the verdict the run was expected to end in.
	Expected checker.Verdict `json:"expected"`
	// Seed is the run's seed: every random choice flows from it.
	Seed  int64          `json:"seed"`
	Check checker.Result `json:"check"`
	// Counterfactual is the same story without its cause, when asked for.
	Counterfactual *Counterfactual `json:"counterfactual,omitempty"`
	// Backend is where the servers ran ("local" or "docker"); Images, on
	// docker, the image of each kind of server ("redis": its image).
	Backend string            `json:"backend,omitempty"`
	Images  map[string]string `json:"images,omitempty"`
	// Environment says what the run started: each kind of server with its
	// version, the clients and the proxies ("etcd 3.4.23 (3 member(s)),
	// ..."); empty for a generator run.
	Environment string `json:"environment,omitempty"`
	// Versions are the versions of its servers that come in several
	// (etcd: "3.4.23"), by backend, on the local host.
	Versions map[string]string `json:"versions,omitempty"`
	// Fixed, when set, says the servers have the story's bug fixed
	// (scenarios.Scenario.FixedOn: "etcd 3.5"): the run was expected to
	// end safe.
	Fixed string `json:"fixed,omitempty"`
	// Machine is how the machine behaved during the story (a generator
	// run: during the trial kept): stalls, CPU pressure, and why the
	// timing could not be trusted, if it could not; nil when nothing was
	// measured (a run interrupted).
	Machine *history.Machine `json:"machine,omitempty"`
	Events  []history.Event  `json:"-"`
	// Duration is the wall time of the whole run, servers included.
	Duration time.Duration `json:"-"`
	// Interrupted, when not empty, says why the run stopped before its
	// story ended: nothing was checked and Events is the history so far.
	Interrupted string `json:"-"`
	// ClientCmd is the client program every client ran (nil: the
	// harness's own Go worker).
	ClientCmd []string `json:"client_cmd,omitempty"`
	// ProgramLock is the client program's own name for its lock, when its
	// hello gives one (protocol.OwnLock); "": the catalogue's name.
	ProgramLock string `json:"program_lock,omitempty"`
	// Departed is the first step the lock did not play as the story
	// tells (Options.Departures); nil when every step happened as told.
	Departed *StoryError `json:"departed,omitempty"`
	// Reference is the same story played with the lock the played lock
	// stands in for (Options.Reference), and how the two compare; nil
	// when none was played.
	Reference *Reference `json:"reference,omitempty"`
}

// Matches reports whether the verdict is the expected one and, when a
// counterfactual ran, whether it flipped. A lock judged against a
// reference matches when both verdicts are decided and it did at least
// as well: its story's expected verdict, and the counterfactual's, are
// the reference's to meet.
func (o *Outcome) Matches() bool {
	if r := o.Reference; r != nil {
		return o.Check.Verdict != checker.Unknown && r.Verdict != checker.Unknown && !r.Worse
	}
	return o.Check.Verdict == o.Expected && (o.Counterfactual == nil || o.Counterfactual.Flipped)
}

// Reference is the story played with the reference lock, as the run it
// judges records it.
type Reference struct {
	// Lock is the reference lock; Verdict, Summary and Dir its run's.
	Lock    string          `json:"lock"`
	Verdict checker.Verdict `json:"verdict"`
	Summary string          `json:"summary"`
	Dir     string          `json:"dir"`
	// Departed is the first step where the reference did not play as the
	// story tells (a story written for a mutant, say); nil: none.
	Departed *StoryError `json:"departed,omitempty"`
	// Worse says the judged lock ended worse than the reference
	// (checker.Worse): unsafe, leaked or hung where the reference did not.
	Worse bool `json:"worse"`
	// StoryLock is the lock the story was told with, when it is not the
	// reference (a lock with a defence of its own, such as
	// zookeeper-lock-delay, or a mutant), and StoryExpected the verdict
	// the story tells it ends with: said beside the judgement, never
	// judged against.
	StoryLock     string          `json:"story_lock,omitempty"`
	StoryExpected checker.Verdict `json:"story_expected,omitempty"`
	// Run is the reference's own run; nil in a run read back from
	// result.json.
	Run *Outcome `json:"-"`
}

// newReference records rr, the reference's run of the story, for out.
func newReference(out, rr *Outcome) *Reference {
	r := &Reference{Lock: rr.Scenario.Lock, Run: rr}
	if own := out.Scenario.OwnLock(); own != r.Lock && own != out.Scenario.Lock && out.Scenario.Expected != "" {
		r.StoryLock, r.StoryExpected = own, out.Scenario.Expected
	}
	if rr.Interrupted == "" {
		r.Verdict, r.Summary, r.Dir, r.Departed = rr.Check.Verdict, rr.Check.Summary, rr.Dir, rr.Departed
		r.Worse = checker.Worse(out.Check.Verdict, rr.Check.Verdict)
	}
	return r
}

// JudgeAgainst judges o against rr, the same story played with the
// reference lock in a run of its own (sim matrix plays each reference
// once for every lock that stands in for it).
func (o *Outcome) JudgeAgainst(rr *Outcome) { o.Reference = newReference(o, rr) }

// JudgedLock names the lock the run played: the registered lock, or the
// client program that implements it.
func (o *Outcome) JudgedLock() string {
	if o.ProgramLock != "" {
		return fmt.Sprintf("%s (like %s) of the client program (%s)", o.ProgramLock, o.Scenario.Lock, strings.Join(o.ClientCmd, " "))
	}
	if len(o.ClientCmd) > 0 {
		return fmt.Sprintf("%s of the client program (%s)", o.Scenario.Lock, strings.Join(o.ClientCmd, " "))
	}
	return o.Scenario.Lock
}

// Sentence says how own's lock did against the reference, and the first
// step where the two parted: "lock redis-plain-del ended unsafe where the
// reference redis ended safe: a finding about redis-plain-del; at step 4
// ...".
func (r *Reference) Sentence(own *Outcome) string {
	lock := own.JudgedLock()
	var b strings.Builder
	switch {
	case r.Verdict == "":
		return "the reference " + r.Lock + " was not played to its end"
	case own.Check.Verdict == checker.Unknown || r.Verdict == checker.Unknown:
		fmt.Fprintf(&b, "undecided: lock %s ended %s, the reference %s %s", lock, own.Check.Verdict, r.Lock, r.Verdict)
	case r.Worse:
		fmt.Fprintf(&b, "lock %s ended %s where the reference %s ended %s: a finding about %s", lock, own.Check.Verdict, r.Lock, r.Verdict, lock)
	case own.Check.Verdict == r.Verdict:
		fmt.Fprintf(&b, "lock %s did as well as the reference %s: both ended %s", lock, r.Lock, r.Verdict)
	default:
		fmt.Fprintf(&b, "lock %s did better than the reference %s: %s where it ended %s", lock, r.Lock, own.Check.Verdict, r.Verdict)
	}
	if r.StoryLock != "" {
		b.WriteString(" (" + r.StoryNote() + ")")
	}
	if p := r.Parted(own); p != "" {
		b.WriteString("; " + p)
	}
	return b.String()
}

// Parted is the first step where own's lock and the reference parted
// from each other, as the story tells it ("at step 4 the story says
// ..."), or "" where they did not.
func (r *Reference) Parted(own *Outcome) string {
	lock := own.JudgedLock()
	d, rd := own.Departed, r.Departed
	switch {
	case d != nil && (rd == nil || rd.Step != d.Step || rd.Saw != d.Saw):
		s := fmt.Sprintf("at step %d the story says %s: lock %s shows %s", d.Step, d.Claimed, lock, d.Saw)
		if rd == nil || rd.Step != d.Step {
			return s + ", the reference as told"
		}
		return s + ", the reference " + rd.Saw
	case rd != nil && (d == nil || d.Step != rd.Step):
		return fmt.Sprintf("at step %d the story says %s: the reference %s shows %s, lock %s as told", rd.Step, rd.Claimed, r.Lock, rd.Saw, lock)
	}
	return ""
}

// StoryNote says how the story's own lock ends, when it is not the
// reference: "the story's own lock, zookeeper-lock-delay, ends safe as
// told"; empty when it is.
func (r *Reference) StoryNote() string {
	if r.StoryLock == "" {
		return ""
	}
	return fmt.Sprintf("the story's own lock, %s, ends %s as told", r.StoryLock, r.StoryExpected)
}

// Counterfactual is a scenario's counterfactual run, as the run it
// belongs to records it.
type Counterfactual struct {
	// Change says what it changed ("without the clock jump on C");
	// Removed lists each step or field it removed or changed.
	Change  string   `json:"change"`
	Removed []string `json:"removed"`
	// Verdict is the counterfactual run's verdict, Expected the flipped
	// verdict it had to reach; Flipped says it did. Summary is its
	// checkers' sentence, Dir its own run directory.
	Verdict  checker.Verdict `json:"verdict"`
	Expected checker.Verdict `json:"expected"`
	Flipped  bool            `json:"flipped"`
	Summary  string          `json:"summary"`
	Dir      string          `json:"dir"`
	// Run is the counterfactual's own run (its Expected is the flipped
	// verdict it must reach); nil in a run read back from result.json.
	Run *Outcome `json:"-"`
}

// newCounterfactual records cr, sc's counterfactual run, for out.
func newCounterfactual(sc *scenarios.Scenario, out, cr *Outcome) *Counterfactual {
	cf := &Counterfactual{Change: sc.Counterfactual.Change, Removed: sc.CounterfactualChanges(), Run: cr}
	if cr != nil && cr.Interrupted == "" {
		cf.Verdict, cf.Expected, cf.Summary, cf.Dir = cr.Check.Verdict, cr.Expected, cr.Check.Summary, cr.Dir
		cf.Flipped = cr.Check.Verdict == cr.Expected && cr.Check.Verdict != out.Check.Verdict
	}
	return cf
}

// Sentence says the counterfactual's outcome in one line.
func (c *Counterfactual) Sentence() string {
	s := fmt.Sprintf("counterfactual, %s: %s", c.Change, c.Verdict)
	if c.Flipped {
		return s + " (the verdict flips, as it must)"
	}
	return s + fmt.Sprintf(" (NOT flipped: it had to be %s)", c.Expected)
}
