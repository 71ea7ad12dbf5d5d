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
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/storage"
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
			stopped.Events, _ = history.Load(filepath.Join(o.Out, "history.jsonl"))
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
	d, err := outdir.Claim(o.Out, outdir.Run, fmt.Sprintf("%s seed %d", sc.Name, o.Seed))
	if err != nil {
		return nil, harness("run directory: %v", err)
	}
	if err := KeepStory(d, sc); err != nil {
		return nil, harness("run directory: %v", err)
	}
	return d, nil
}

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
	hf, err := dir.Create("history.jsonl")
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

// newTarget is an empty Target with a fresh in-process toxiproxy server.
func newTarget() *nemesis.Target {
	return &nemesis.Target{Redis: map[string]*env.Redis{}, Replicas: map[string]*env.Redis{}, Servers: map[string]nemesis.Server{},
		Network: env.NewNetwork(), Clients: map[int]*env.Proc{},
		ClientClocks: map[int]*clockshim.Control{}}
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

// play sets up the environment and carries out the steps.
func (r *run) play(ctx context.Context) error {
	if err := r.setup(ctx); err != nil {
		return err
	}
	// The story's timing is watched from its first step to its last.
	r.guard, r.storyFrom = startGuard(GuardTick), r.rec.Now()
	r.cpuFrom, r.cpuKnown = cpuStall()
	defer func() {
		r.worst, r.worstAt = r.guard.Stop()
		r.storyTo = r.rec.Now()
		r.cpuTo, _ = cpuStall()
	}()
	for i, st := range r.sc.Steps {
		if err := ctx.Err(); err != nil {
			return harness("interrupted before step %d: %v", r.sc.StepNumber(i), err)
		}
		r.stepAt = i
		r.hook(ctx, r.o.BeforeStep, i, st)
		switch {
		case r.sc.IsCounterfactual:
			// The story's words, under the numbers the story shows, and
			// what a changed step does instead.
			r.say("%s", r.sc.Narrate(i))
			if st.Say != "" {
				r.rec.Add(history.Event{Type: history.Note, Op: "step", Detail: st.Say})
			}
		case st.Say != "":
			if r.o.BeforeStep == nil { // the hook has shown it
				r.say("%s", st.Say)
			}
			r.rec.Add(history.Event{Type: history.Note, Op: "step", Detail: st.Say})
		}
		if expectsSomething(st) && st.Do != "renewal" {
			r.claims = append(r.claims, claim{index: i, st: st, from: r.rec.Now()})
		}
		r.overlaps.sending(i, st, r.rec.Now(), r.sc.Margin.Duration)
		if st.Do == "renewal" {
			if err := r.checkRenewal(i, st); err != nil {
				return err
			}
		} else if err := r.step(ctx, st); err != nil {
			if r.hung != nil {
				return r.endHung(ctx, i)
			}
			return harness("%s:%d: step %d (%s): %v", r.sc.File, st.Line, r.sc.StepNumber(i), st.Describe(), err)
		}
		if err := r.settle(false); err != nil {
			return err
		}
		r.hook(ctx, r.o.AfterStep, i, st)
	}
	// Collect what is still in flight, so every operation has completed.
	for id := range r.pending {
		if err := r.wait(ctx, id); err != nil {
			if r.hung != nil {
				return r.endHung(ctx, len(r.sc.Steps)-1)
			}
			return harness("client %d: %v", id, err)
		}
	}
	if err := r.recordJobs(ctx); err != nil {
		return err
	}
	return r.settle(true)
}

// hook calls a step hook, when set, with step i and the history so far.
func (r *run) hook(ctx context.Context, h func(context.Context, StepView), i int, st scenarios.Step) {
	if h != nil {
		h(ctx, StepView{Scenario: r.sc, Index: i, Step: st, Now: r.rec.Now(), Events: r.rec.Events()})
	}
}

// setup starts the servers, the proxies and the clients.
func (r *run) setup(ctx context.Context) error {
	tmp, err := env.TempDir("locksim-run-")
	if err != nil {
		return harness("temp dir: %v", err)
	}
	r.tmp = tmp
	spec, err := clients.Lookup(r.sc.Lock)
	if err != nil {
		return harness("%v", err)
	}
	if err := r.checkClientCmd(ctx); err != nil { // external.go
		return err
	}
	plan := planServers(r.sc, spec) // servers.go
	if err := r.checkHost(ctx, plan); err != nil {
		return err
	}
	if r.o.Keep != nil {
		if err := r.o.Keep.lend(ctx, r, plan); err != nil { // kept.go
			return err
		}
	} else {
		servers, pg, err := r.startServers(ctx, plan, r.tmp, r.target.Network)
		if err != nil {
			return err
		}
		r.useServers(servers, pg)
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for c := 1; c <= r.sc.Clients; c++ {
		init, err := r.clientInit(c)
		if err != nil {
			return err
		}
		start, err := r.startOptions(init) // external.go
		if err != nil {
			return err
		}
		logf, err := r.dir.Create(fmt.Sprintf("client-%d.log", c))
		if err != nil {
			return harness("%v", err)
		}
		wg.Add(1)
		go func(c int, init protocol.Init) {
			defer wg.Done()
			defer logf.Close()
			w, err := worker.StartWith(ctx, c, r.rec, init, logf, start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			r.clients[c] = w
			r.target.Clients[c] = w.Proc()
			w.SetRecorder(r.rec, r.narrate)
		}(c, init)
	}
	wg.Wait()
	if len(errs) > 0 {
		return startError(errs) // external.go
	}
	r.sayClientProgram()
	var servers []string
	for _, s := range r.servers {
		servers = append(servers, s.Describe())
	}
	if r.storage == nil {
		servers = append(servers, "no PostgreSQL")
	}
	r.environment = fmt.Sprintf("%s, %d client process(es), %d proxies%s", strings.Join(servers, ", "), r.sc.Clients, len(r.target.Network.Links()), r.where())
	r.say("environment ready: %s", r.environment)
	return nil
}

// clientInit builds client c's links, one proxy per server it talks to,
// and the config its worker starts with.
func (r *run) clientInit(c int) (protocol.Init, error) {
	in := protocol.Init{
		Lock:          r.sc.Lock,
		Config:        clients.Config{ClientID: c, NodeTimeout: r.sc.NodeTimeout.Duration},
		StorageMode:   storage.Mode(r.sc.Storage),
		Fence:         r.sc.Fence,
		Watchdog:      r.sc.Watchdog,
		WatchdogEvery: r.sc.WatchdogEvery.Duration,
		WatchdogMax:   r.sc.WatchdogMax,
		CheckLease:    r.sc.CheckLease,
	}
	// The client's wall clock, which a clock-jump step can move.
	in.ClockFile = filepath.Join(r.tmp, fmt.Sprintf("client-%d.clock", c))
	clock, err := clockshim.NewControl(in.ClockFile)
	if err != nil {
		return in, harness("client %d's clock: %v", c, err)
	}
	r.target.ClientClocks[c] = clock
	// One proxy per server, which link faults act on; with r.direct
	// (generator.go) the client dials the server itself.
	link := func(node, addr string) (string, error) {
		l, err := r.target.Network.AddLink(env.LinkName(c, node), addr)
		if err == nil {
			r.links = append(r.links, l.Name)
		}
		if err != nil || r.direct {
			return addr, err
		}
		return l.Listen, nil
	}
	for _, s := range r.servers {
		if err := s.Connect(&in.Config, link); err != nil {
			return in, harness("%v", err)
		}
	}
	if r.storage != nil {
		// The storage's connection has a link of its own, beside the
		// lock's, so a fault can hit one and not the other.
		store, err := link(nemesis.StorageNode, r.storage.Addr())
		if err != nil {
			return in, harness("%v", err)
		}
		if r.sc.Storage != "" || r.sc.Fence == clients.FencePostgres {
			// The protected storage stands for another database: the
			// lock server's idle timeouts do not apply to it.
			in.Storage = r.storage.DSN(store) + "&idle_session_timeout=0&idle_in_transaction_session_timeout=0"
		}
	}
	return in, nil
}

// key is the lock a step names, else the scenario's.
func (r *run) key(st scenarios.Step) string {
	if st.Key != "" {
		return st.Key
	}
	return r.sc.Key
}

// step carries out one step of the story.
func (r *run) step(ctx context.Context, st scenarios.Step) error {
	ttl := r.sc.TTL.Duration
	if st.TTL.Duration > 0 {
		ttl = st.TTL.Duration
	}
	switch st.Do {
	case "say":
		return nil
	case "sleep":
		select {
		case <-time.After(st.For.Duration):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case "acquire", "release", "extend":
		return r.client(ctx, st, protocol.Command{Op: st.Do, Key: r.key(st), TTL: ttl, Wait: st.Wait.Duration})
	case "write":
		cmd := protocol.Command{Op: st.Do, Key: r.key(st), Work: st.Work.Duration, Unlocked: st.Unlocked, Period: st.Period}
		if r.sc.AnchoredPause(r.stepAt, st.Client) {
			cmd.StopAfterCheck = true
			if r.anchored == nil {
				r.anchored = map[int]int64{}
			}
			r.anchored[st.Client] = r.rec.Now()
		}
		return r.client(ctx, st, cmd)
	case "wait":
		if err := r.wait(ctx, st.Client); err != nil {
			return err
		}
		return nil
	case "kill":
		r.clients[st.Client].Kill()
		delete(r.pending, st.Client)
		r.say("  client %d killed (kill -9)", st.Client)
		return nil
	case "heal":
		return r.healAll(ctx)
	}
	if k, ok := nemesis.LookupKind(st.Do); ok {
		if k.Heals != nil {
			return r.heal(ctx, func(f nemesis.Fault) bool { return k.Heals(st.Params, f) })
		}
		if st.At == scenarios.AtLeaseChecked {
			stopped, err := r.awaitCheck(ctx, st.Aim().Client)
			if err != nil {
				return err
			}
			r.selfStopped = stopped
		}
		return r.inject(ctx, k.New(st.Params))
	}
	return fmt.Errorf("the runner does not know action %q", st.Do)
}

// client sends a command to a client, and waits for it unless async.
func (r *run) client(ctx context.Context, st scenarios.Step, cmd protocol.Command) error {
	if _, busy := r.pending[st.Client]; busy {
		if err := r.wait(ctx, st.Client); err != nil {
			return err
		}
	}
	w := r.clients[st.Client]
	started, done := w.Start(cmd)
	r.pending[st.Client] = done
	r.inFlight[st.Client] = inFlight{op: st.Do, bound: HangBound(cmd.TTL) + cmd.Wait + cmd.Work}
	if st.Async {
		// Go on once the client has begun (recorded its invocation), so
		// that a fault in the next step hits the operation, not its start.
		select {
		case <-started:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := r.wait(ctx, st.Client); err != nil {
		return err
	}
	return nil
}

// narrate tells an operation's outcome as it arrives, at its own time,
// whatever step waits for it; and a watchdog's failed renewal.
func (r *run) narrate(e history.Event) {
	if e.Type == history.Note && e.Op == history.OpRenew && e.Reason != "" {
		r.sayAt(e.Time, "  client %d's watchdog: renewal failed (%s)", e.Process, e.Reason)
		return
	}
	if !e.Completes() || e.Op == history.OpCrash {
		return
	}
	msg := fmt.Sprintf("  client %d %s: %s", e.Process, e.Op, e.Type)
	if len(e.Nodes) > 0 {
		msg += fmt.Sprintf(", nodes %v", e.Nodes)
	}
	if e.Read != nil && e.Wrote != nil {
		msg += fmt.Sprintf(", read %d, wrote %d", *e.Read, *e.Wrote)
	}
	if e.Fence != 0 {
		msg += fmt.Sprintf(", fence %d", e.Fence)
	}
	if e.LeaseEnd > 0 {
		msg += fmt.Sprintf(", believes it holds the lock until t=%.3fs", float64(e.LeaseEnd)/1e9)
	}
	if e.Reason != "" {
		msg += ", reason " + e.Reason
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	r.sayAt(e.Time, "%s", msg)
}

// wait collects the client's operation in flight, if any.
func (r *run) wait(ctx context.Context, client int) error {
	ch, ok := r.pending[client]
	if !ok {
		return nil
	}
	delete(r.pending, client)
	call := r.inFlight[client]
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(call.bound):
		return r.hang(client, call)
	}
}

// awaitCheck waits until client c's write, sent with a pause anchored in
// it, reports that its lease check passed: the client has then stopped
// itself before writing (protocol.Command.StopAfterCheck), and the pause
// step that follows finds it stopped. A write that ends first (its check
// found the lease spent) never reaches the anchor: the story did not
// happen as told.
func (r *run) awaitCheck(ctx context.Context, c int) (stopped int64, err error) {
	from, ok := r.anchored[c]
	if !ok {
		return 0, harness("client %d has no write in flight with a pause anchored in it", c)
	}
	delete(r.anchored, c)
	deadline := time.Now().Add(StepTimeout)
	for {
		events := r.rec.Events()
		for _, e := range events {
			if e.Process == c && e.Type == history.Note && e.Op == history.OpCheck && e.Time >= from {
				r.sayAt(e.Time, "  client %d's lease check passed; it stops itself before its write", c)
				return e.Time, r.awaitSelfStop(ctx, c, deadline)
			}
		}
		if e, done := completion(events, c, history.OpWrite, from); done {
			return 0, harness("client %d's write ended (%s) without its lease check passing, so the pause anchored there never struck", c, saw(e))
		}
		if time.Now().After(deadline) {
			return 0, harness("client %d's lease check did not report within %v", c, StepTimeout)
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// awaitSelfStop waits until client c's process has stopped itself. The
// check note can arrive before the worker's own SIGSTOP lands; a pause
// struck in between would send its SIGCONT first, and the worker's late
// SIGSTOP would then hold it stopped for good.
func (r *run) awaitSelfStop(ctx context.Context, c int, deadline time.Time) error {
	for !r.clients[c].Stopped() {
		if time.Now().After(deadline) {
			return harness("client %d reported its lease check but did not stop itself within %v", c, StepTimeout)
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// StepTimeout bounds how long the runner waits for a client to report
// its lease check (awaitCheck): far longer than any story's pauses and
// work, so only a client that hangs reaches it. A call's answer is
// bounded by HangBound.
const StepTimeout = 2 * time.Minute

// inject records and injects a fault; it is healed by healAll.
func (r *run) inject(ctx context.Context, f nemesis.Fault) error {
	fields := f.Fields()
	e := r.rec.Add(history.Event{Type: history.Fault, Op: f.Name(), Target: f.On(), Detail: f.Detail(), Fault: &fields})
	r.faults = append(r.faults, f)
	if k, ok := nemesis.LookupKind(f.Name()); ok && k.Lasting != "" {
		r.lasting = f.Name() + ": " + k.Lasting
	}
	if stopsClient(fields) {
		// Until its heal, the client does not run on purpose (guard.go).
		if r.paused == nil {
			r.paused = map[int]spans{}
		}
		until := int64(math.MaxInt64)
		if fields.Lasts > 0 {
			until = r.rec.Base() + e.Time + fields.Lasts // it resumes by itself
		}
		from := e.Time
		if r.selfStopped != 0 {
			from = min(from, r.selfStopped) // it stopped itself at its anchor
		}
		r.paused[fields.Client] = append(r.paused[fields.Client], [2]int64{r.rec.Base() + from, until})
	}
	r.selfStopped = 0
	if err := f.Inject(ctx, r.target); err != nil {
		return err
	}
	r.say("  fault: %s on %s (%s)", f.Name(), f.On(), f.Detail())
	return nil
}

// stopsClient says whether a fault's recorded effect is to stop a
// client's process (a pause of a client, not of a node): the timing guard
// then does not count the client's stall against the run.
func stopsClient(f history.FaultFields) bool {
	return f.Effect == history.EffectPause && f.Client != 0 && f.Node == ""
}

// healAll heals every injected fault, newest first, and records each heal.
func (r *run) healAll(ctx context.Context) error {
	return r.heal(ctx, func(nemesis.Fault) bool { return true })
}

// heal heals the injected faults that match, newest first, and records
// each heal.
func (r *run) heal(ctx context.Context, match func(nemesis.Fault) bool) error {
	var errs []error
	var kept []nemesis.Fault
	for i := len(r.faults) - 1; i >= 0; i-- {
		f := r.faults[i]
		if !match(f) {
			kept = append([]nemesis.Fault{f}, kept...)
			continue
		}
		if err := f.Heal(ctx, r.target); err != nil {
			errs = append(errs, fmt.Errorf("heal %s on %s: %w", f.Name(), f.On(), err))
		}
		e := r.rec.Add(history.Event{Type: history.Heal, Op: f.Name(), Target: f.On()})
		if fields := f.Fields(); stopsClient(fields) {
			r.paused[fields.Client].end(r.rec.Base() + e.Time)
		}
	}
	r.faults = kept
	return errors.Join(errs...)
}

// teardown heals, stops the clients, the proxies and the servers, and
// removes the temp dir. It runs on every path out of Run.
func (r *run) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.healAll(ctx); err != nil {
		r.say("warning: %v", err)
	}
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() { defer wg.Done(); c.Stop() }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.closeServers() }()
	wg.Wait()
	if r.o.Keep != nil {
		r.o.Keep.giveBack(r) // kept.go
	} else {
		r.target.Network.Close()
	}
	for _, c := range r.target.ClientClocks {
		_ = c.Close()
	}
	if r.tmp != "" {
		env.RemoveTempDir(r.tmp)
	}
}
