// Package runner plays one scenario against real servers: it builds the
// environment (servers, proxies), starts the client processes, carries out
// the story step by step while recording the history (history.jsonl and
// the clients' logs in the run directory), heals every fault, tears
// everything down, checks the history and returns the Outcome. Hooks in
// Options see each step; the caller draws the reports.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
)

// Options tune one run.
type Options struct {
	// Out is the run directory; empty means runs/<scenario>-<time>.
	Out string
	// Seed is recorded with the results; every random choice flows from it.
	Seed int64
	// Log receives the narration (stderr for the CLI); nil discards it.
	Log io.Writer
	// Expected overrides the scenario's expected verdict.
	Expected checker.Verdict
	// BeforeStep, when set, is called before each step of a scripted
	// story and the run waits for it (workshop mode shows the state and
	// waits for Enter); the narration then leaves the step's say line to
	// it. AfterStep, when set, is called once the step has been carried
	// out. Neither is called for a counterfactual or a generator.
	BeforeStep, AfterStep func(ctx context.Context, v StepView)
	// Recorded, when set, sees each event of a scripted story's history
	// as it is recorded (history.Recorder.Watch: it must return quickly),
	// with the story it belongs to: the counterfactual's events come with
	// the counterfactual story (IsCounterfactual), the reference's with
	// the reference's. `sim workshop` draws the timeline live from them.
	Recorded func(sc *scenarios.Scenario, e history.Event)
	// Counterfactual plays the story a second time without its cause
	// (the scenario's counterfactual block), into Out/counterfactual, and
	// requires the verdict to flip.
	Counterfactual bool
	// ClientCmd runs each client as this program and its arguments
	// instead of the harness's own Go worker (it overrides the scenario's
	// client_cmd, but not a counterfactual's that gives client_cmd): a
	// client speaking locksim worker protocol v1 or v2 (docs/protocol.md,
	// external.go).
	ClientCmd []string
	// Host says where the servers run (servers.go): local processes
	// unless it or the scenario says docker.
	Host Host
	// Keep, when set, lends the run servers kept from the last run and
	// keeps them for the next (kept.go); nil: the run starts its own and
	// stops them.
	Keep *Kept
	// Departures plays the story to its end when the lock does not behave
	// as a step claims, recording the first such step in
	// Outcome.Departed, and checks the history: for a lock that replaces
	// the story's own (sim run --lock, --client-cmd), where not behaving
	// as told is a finding about that lock, not a failure of the harness.
	// Without it, the first contradiction ends the run (a StoryError).
	Departures bool
	// Reference, when set, is the story as the reference lock plays it
	// (scenarios.ReferenceLock: the lock the played one stands in for, with
	// the harness's own worker): it is played after the run, into
	// Out/reference, with Departures, and the run is judged against it
	// (Outcome.Reference).
	Reference *scenarios.Scenario
}

// StepView is a step of a scripted story as a hook sees it.
type StepView struct {
	Scenario *scenarios.Scenario
	// Index is the step's place in Scenario.Steps, from 0.
	Index int
	Step  scenarios.Step
	// Now is the time on the record's clock, Events the history so far.
	Now    int64
	Events []history.Event
}

// HarnessError is a failure of the harness itself (a server that would not
// start, a worker that died), as opposed to a verdict. The CLI exits 2.
type HarnessError struct{ Err error }

func (e *HarnessError) Error() string { return e.Err.Error() }
func (e *HarnessError) Unwrap() error { return e.Err }

func harness(format string, args ...any) error {
	return &HarnessError{Err: fmt.Errorf(format, args...)}
}

// run is the state of one run in progress.
type run struct {
	sc *scenarios.Scenario
	o  Options
	// programLock is the client program's own name for the story's lock
	// (its hello's OwnLock), "" when it uses the catalogue's.
	programLock string
	rec         *history.Recorder
	log         io.Writer
	target      *nemesis.Target
	clients     map[int]*worker.Client
	pending     map[int]<-chan error
	faults      []nemesis.Fault
	tmp         string
	// dir is the run directory (o.Out), claimed: the clients' logs go
	// there.
	dir *outdir.Dir
	// servers are the run's servers, a lock backend's each (servers.go):
	// the lock's, then those its storage and fence need.
	servers []started
	// storage is the PostgreSQL cluster among them, which holds the
	// protected storage and a postgres fence; nil if none runs.
	storage *env.Postgres
	// direct connects the clients straight to the servers, past their
	// proxies (generator.go: a fault that needs no network).
	direct bool
	// logMu keeps narration lines whole: outcomes are told from the
	// clients' reading goroutines.
	logMu sync.Mutex
	// claims are the story's statements still waiting for their
	// operations (story.go).
	claims []claim
	// inFlight is, by client, the operation last sent and how long the
	// story waits for its answer (hang.go).
	inFlight map[int]inFlight
	// hung is the call that never returned, once one has not (hang.go).
	hung *hungCall
	// overlaps are the windows the story tells operations to overlap in
	// (overlap.go).
	overlaps overlaps
	// guard watches the harness's timing during the steps (guard.go):
	// the worst stall, when, and the story's span on the record's clock.
	guard              *guard
	worst, worstAt     time.Duration
	storyFrom, storyTo int64
	// cpuFrom and cpuTo read the CPU pressure stall counter (µs) at the
	// story's ends; cpuKnown says the kernel gives it.
	cpuFrom, cpuTo int64
	cpuKnown       bool
	// paused holds, by client, the spans in which the story paused it, on
	// CLOCK_MONOTONIC. Generator trials keep it from trial to trial: a
	// client paused at the end of one trial reports its stall when it
	// wakes, which may be in the next.
	paused map[int]spans
	// environment says what setup started, for the narration.
	environment string
	// links are the clients' links the run added, which it removes from
	// a network kept for the next run; lasting says why its servers must
	// not be (a fault's nemesis.Kind.Lasting, or the run's error).
	links   []string
	lasting string
	// keptShape names the kept servers the run borrowed (kept.go).
	keptShape string
	// departed is the first step the lock did not play as the story
	// tells, with Options.Departures (story.go).
	departed *StoryError
	// stepAt is the index of the step being played.
	stepAt int
	// anchored holds, by client, the record's time just before a write
	// was sent with a pause anchored in it (Step.At): the check note
	// that pause waits for comes after it.
	anchored map[int]int64
	// selfStopped, when set, is when (record's time) the client that the
	// next pause injected stopped itself at its anchor: its paused span
	// starts there, not at the injection.
	selfStopped int64
}

// Run plays sc and checks its history; with o.Counterfactual it then plays
// the counterfactual story too. The environment is gone when it returns,
// whatever happened. A run interrupted (ctx done) returns its error and an
// Outcome to record, Interrupted set (in its Counterfactual, when that was
// the run interrupted); any other error comes with no Outcome.
func Run(ctx context.Context, sc *scenarios.Scenario, o Options) (*Outcome, error) {
	started := time.Now()
	if o.Out == "" {
		o.Out = DefaultOut(sc.Name, started)
	}
	h, err := o.Host.clockedFor(sc)
	if err != nil {
		return nil, harness("server version: %v", err)
	}
	o.Host = h
	versions, err := o.Host.versionsOf(sc)
	if err != nil {
		return nil, harness("server version: %v", err)
	}
	fixed := ""
	if o.Expected == "" {
		o.Expected = sc.Expected
		if fixed = sc.FixedOn(versions); fixed != "" {
			// Expected safe, played to its end where its steps go
			// otherwise, with no bug for a counterfactual to take away.
			o.Expected, o.Departures, o.Counterfactual = checker.Safe, true, false
			if o.Log != nil {
				fmt.Fprintf(o.Log, "%s: %s: expected safe\n", sc.Name, scenarios.FixedSentence("story", fixed, versions))
			}
		}
	}
	var cfs *scenarios.Scenario
	if o.Counterfactual {
		var err error
		if cfs, err = sc.CounterfactualScenario(); err != nil {
			return nil, harness("%v", err)
		}
		// A counterfactual whose bug these servers have fixed (its own
		// fixed_in) has nothing to flip here.
		if cv, err := o.Host.versionsOf(cfs); err == nil {
			if fixed := cfs.FixedOn(cv); fixed != "" {
				if o.Log != nil {
					fmt.Fprintf(o.Log, "%s: no counterfactual played: %s\n", sc.Name, scenarios.FixedSentence("counterfactual", fixed, cv))
				}
				cfs = nil
			}
		}
	}
	play := playScripted
	if sc.Generator != nil {
		play = runGenerated // generator.go
	}
	out, err := play(ctx, sc, o, started)
	if out != nil {
		out.Versions, out.Fixed = versions, fixed
	}
	if err != nil {
		if ctx.Err() != nil {
			// Keep what the run has: its history so far.
			stopped := &Outcome{Scenario: sc, Dir: o.Out, Seed: o.Seed, Expected: o.Expected, Duration: time.Since(started), Interrupted: err.Error()}
			stopped.Events, _ = history.Load(filepath.Join(o.Out, outdir.HistoryFile))
			return stopped, err
		}
		return nil, err
	}
	if cfs != nil {
		co := o
		co.Out, co.Expected, co.Counterfactual = filepath.Join(o.Out, "counterfactual"), cfs.Expected, false
		co.BeforeStep, co.AfterStep = nil, nil
		if sc.Counterfactual.Given("client_cmd") {
			// The counterfactual changes the client program (to the
			// harness's own worker, say): --client-cmd must not undo the
			// one thing it changes.
			co.ClientCmd = nil
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "\n%s: the counterfactual, %s (it must end %s)\n", sc.Name, sc.Counterfactual.Change, cfs.Expected)
		}
		cr, err := Run(ctx, cfs, co)
		if cr != nil || err == nil {
			out.Counterfactual = newCounterfactual(sc, out, cr)
		}
		if err != nil {
			if cr == nil {
				return nil, fmt.Errorf("counterfactual: %w", err)
			}
			return out, fmt.Errorf("counterfactual: %w", err)
		}
	}
	if ref := o.Reference; ref != nil {
		ro := o
		// Expected left to Run: the reference's story, or safe on servers
		// that have its bug fixed (Scenario.FixedOn), as a run of its own.
		ro.Out, ro.Expected, ro.Counterfactual, ro.Reference, ro.ClientCmd = filepath.Join(o.Out, "reference"), "", false, nil, nil
		ro.BeforeStep, ro.AfterStep, ro.Departures = nil, nil, true
		if o.Log != nil {
			fmt.Fprintf(o.Log, "\n%s: the reference, the same story with locksim's lock %s\n", sc.Name, ref.Lock)
		}
		rr, err := Run(ctx, ref, ro)
		if rr != nil {
			out.Reference = newReference(out, rr)
		}
		if err != nil {
			return out, fmt.Errorf("the reference %s: %w", ref.Lock, err)
		}
	}
	return out, nil
}

// DefaultOut is the run directory of a run started at t with no --out.
func DefaultOut(name string, t time.Time) string {
	return filepath.Join("runs", fmt.Sprintf("%s-%s", name, t.Format("20060102-150405.000")))
}

// claimRunDir claims o.Out as sc's run directory, before any server
// starts: a directory holding anything locksim did not write is refused.
// It keeps the story as the run plays it there (StoryFile), so that the
// run can be checked again offline (Outcome.Recheck) or played again.
func claimRunDir(sc *scenarios.Scenario, o Options) (*outdir.Dir, error) {
	d, err := outdir.Claim(o.Out, outdir.Run, runDirID(sc.Name, o.Seed))
	if err != nil {
		return nil, harness("run directory: %v", err)
	}
	if err := KeepStory(d, sc); err != nil {
		return nil, harness("run directory: %v", err)
	}
	return d, nil
}

// OpenRunDir claims the directory of r, a run played, again: for the
// reports written into it after the run, under the same claim the run
// made (a directory holding anything locksim did not write is refused).
func OpenRunDir(r *Outcome) (*outdir.Dir, error) {
	return outdir.Claim(r.Dir, outdir.Run, runDirID(r.Scenario.Name, r.Seed))
}

// runDirID is what a run directory's marker says it holds.
func runDirID(story string, seed int64) string { return fmt.Sprintf("%s seed %d", story, seed) }

// KeepStory writes sc, the story a run plays, into its run directory d
// (StoryFile).
func KeepStory(d *outdir.Dir, sc *scenarios.Scenario) error {
	text, err := scenarios.MarshalResolved(sc)
	if err != nil {
		return fmt.Errorf("%s: %v", StoryFile, err)
	}
	head := fmt.Sprintf("# The story %s as this run played it (its defaults, and any --lock or flag, applied):\n"+
		"# sim check and sim report read it; sim run %s plays it again.\n", sc.Name, filepath.Join(d.Path(), StoryFile))
	return d.WriteFile(StoryFile, append([]byte(head), text...))
}

// StoryFile is the file of the run directory that keeps the story the
// run played, resolved (scenarios.MarshalResolved).
const StoryFile = "scenario.yaml"

// playScripted plays a scripted story and checks its history.
func playScripted(ctx context.Context, sc *scenarios.Scenario, o Options, started time.Time) (*Outcome, error) {
	dir, err := claimRunDir(sc, o)
	if err != nil {
		return nil, err
	}
	hf, err := dir.Create(outdir.HistoryFile)
	if err != nil {
		return nil, harness("run directory: %v", err)
	}
	defer hf.Close()
	r := &run{
		sc: sc, o: o, log: o.Log, dir: dir,
		rec:      history.NewRecorder(history.Monotonic(), hf),
		clients:  map[int]*worker.Client{},
		pending:  map[int]<-chan error{},
		inFlight: map[int]inFlight{},
		target:   newTarget(),
	}
	if r.log == nil {
		r.log = io.Discard
	}
	if f := o.Recorded; f != nil {
		r.rec.Watch(func(e history.Event) { f(sc, e) })
	}
	r.say("%s: %s (seed %d)", sc.Name, sc.Title, o.Seed)
	runErr := r.play(ctx)
	if runErr != nil && r.lasting == "" {
		r.lasting = "the last run failed: " + runErr.Error()
	}
	stalls := r.clientStalls() // before teardown: the clients go with it
	r.teardown()
	if err := r.rec.Flush(); err != nil && runErr == nil {
		runErr = harness("writing history: %v", err)
	}
	events := r.rec.Events()
	busy, stalled, contended := r.tooBusy(stalls)
	var story *StoryError
	if runErr != nil && !(contended && errors.As(runErr, &story)) {
		return nil, runErr
	}
	if story == nil {
		story = r.departed
	}
	m := r.machine(stalls, r.sc.Margin.Duration, busy)
	m.Stalled = stalled
	m.Missed = r.overlaps.missed(sc, events)
	out := &Outcome{
		Scenario: sc, Dir: o.Out, Seed: o.Seed, Expected: o.Expected,
		Events: events, Duration: time.Since(started),
		Machine: &m, Backend: r.host().Name, Images: r.images(), Departed: story, ClientCmd: r.clientCmd(),
		ProgramLock: r.programLock, Environment: r.environment,
	}
	res, err := checker.Check(events, CheckOptions(r.sc))
	if err != nil {
		return nil, harness("the history breaks the recording's rules: %v", err)
	}
	// Judged here as sim check judges the run directory again (verdict.go).
	var voided bool
	out.Check, voided = Judge(res, sc, events, &m, story)
	switch {
	case voided:
		r.say("%s", out.Check.Summary)
	case contended:
		r.say("the machine was busy (%s), but every step happened as the story tells it", busy)
	}
	return out, nil
}

// say prints a line of narration with the run's clock.
func (r *run) say(format string, args ...any) {
	r.sayAt(r.rec.Now(), format, args...)
}

// sayAt prints a line of narration stamped with t, the time of what it
// tells (an operation's outcome prints as it arrives, at its own time).
func (r *run) sayAt(t int64, format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.log, "[%7.3fs] %s\n", float64(t)/1e9, fmt.Sprintf(format, args...))
}
