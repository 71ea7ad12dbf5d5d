// generator.go is generator mode: instead of a scripted story, every client
// loops acquire -> read-modify-write -> release inside its own process
// (worker/loop.go) while a schedule drawn from the seed (schedule.go)
// injects the scenario's fault. Trials reuses one environment (servers,
// proxies, client processes) for many trials, resetting state and clocks
// between them, which is what makes a sweep of hundreds of trials quick.

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/storage"
	"github.com/locksim/locksim/worker"
)

// settle is how long the clients go on looping after a fault has run its
// course: long enough for another client to take an expired lock, work
// and write (a few milliseconds at the loopback floor), with room for a
// noisy machine.
const settle = 25 * time.Millisecond

// Trials is one environment ready to play generator trials.
type Trials struct {
	r     *run
	sc    *scenarios.Scenario
	nodes int
	// logs is the temp dir holding the clients' logs when Options.Out
	// was empty; Close removes it.
	logs string
	// storage resets the protected storage before each trial, on a
	// connection it keeps (nil: the run has no storage).
	storage *storage.Resetter
}

// Trial is the outcome of one generator trial.
type Trial struct {
	// Seed is the trial's seed (TrialSeed).
	Seed uint64
	// Plan is the fault schedule drawn from Seed.
	Plan []Planned
	// Events is the trial's history, time zero at its start.
	Events []history.Event
	// Check is what the checkers found in Events.
	Check checker.Result
	// Injected counts the planned faults that struck (a client that never
	// entered a critical section after a fault was armed escapes it);
	// Struck measures each as it struck.
	Injected int
	Struck   []Struck
	// Wall is how long the trial took, reset and check included.
	Wall time.Duration
	// Machine is how the machine behaved during the trial.
	Machine history.Machine
}

// Violated says whether the lock's mutual exclusion was broken or the
// data damaged (any finding of the checkers).
func (t *Trial) Violated() bool { return t.Check.Violations > 0 }

// Damaged says whether the storage accepted a lost update or a stale write.
func (t *Trial) Damaged() bool {
	return t.Check.Damage.LostUpdateCount+t.Check.Damage.StaleWriteCount > 0 || t.Check.Damage.Outcome == checker.OutcomeIllegal
}

// OpenTrials starts sc's servers, proxies and client processes. o.Out
// receives the clients' logs (a temp dir when empty). Close stops it all.
func OpenTrials(ctx context.Context, sc *scenarios.Scenario, o Options) (*Trials, error) {
	if sc.Generator == nil {
		return nil, harness("%s is a scripted scenario: generator trials need a generator block", sc.Name)
	}
	r := &run{
		sc: sc, o: o, log: o.Log,
		rec:     history.NewRecorder(history.Monotonic(), nil),
		clients: map[int]*worker.Client{},
		pending: map[int]<-chan error{},
		target:  newTarget(),
	}
	if r.log == nil {
		r.log = io.Discard
	}
	// Only a latency fault acts on the network: with any other, the
	// clients talk to the servers straight, at the loopback floor.
	r.direct = !sc.Generator.ActsOnLinks()
	t := &Trials{r: r, sc: sc, nodes: sc.Nodes}
	if r.o.Out == "" {
		dir, err := env.TempDir("locksim-trials-")
		if err != nil {
			return nil, harness("temp dir: %v", err)
		}
		r.o.Out, t.logs = dir, dir
	}
	dir, err := claimRunDir(sc, r.o)
	if err != nil {
		t.Close()
		return nil, err
	}
	r.dir = dir
	if err := r.setup(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Close heals, stops the clients and the servers.
func (t *Trials) Close() {
	if t.storage != nil {
		t.storage.Close()
	}
	t.r.teardown()
	if t.logs != "" {
		env.RemoveTempDir(t.logs)
	}
}

// reset readies the environment for the next trial: every fault healed,
// every server reset (a Redis node flushed with its clock back to real
// time: backends.Servers.Reset), the storage reset in place (counter 0,
// fence sequence restarted: storage.Reset).
func (t *Trials) reset(ctx context.Context) error {
	r := t.r
	if err := r.healAll(ctx); err != nil {
		return err
	}
	var resetStorage func() error
	if r.storage != nil {
		if t.storage == nil {
			t.storage = storage.NewResetter(r.storage.DSN(r.storage.Addr()))
		}
		resetStorage = func() error { return t.storage.Reset(ctx) }
	}
	return resetServers(ctx, r.servers, resetStorage)
}

// Play runs one trial: reset, every client loops for the generator's
// duration (or longer, see loopDuration) while the schedule drawn from
// seed strikes, then heal and check. g and ttl override the scenario's
// generator and TTL (a sweep point sets them).
func (t *Trials) Play(ctx context.Context, g scenarios.Generator, ttl time.Duration, seed uint64) (*Trial, error) {
	started := time.Now()
	if err := t.reset(ctx); err != nil {
		return nil, harness("resetting for the next trial: %v", err)
	}
	r := t.r
	rec := history.NewRecorder(history.Monotonic(), nil)
	r.rec = rec
	tr := &Trial{Seed: seed, Plan: Schedule(g, len(r.clients), t.nodes, seed)}
	// The trial's timing is watched as a story's is (guard.go): a
	// violation on a machine that stalled past the margin is no verdict.
	guard := startGuard(GuardTick)
	// r.paused is kept: a client paused by the last trial may report its
	// stall during this one (guard.go: clientStalls).
	r.storyFrom, r.storyTo = rec.Now(), 0

	// The watch sees every event as it arrives, and tells the schedule
	// when a held client's write completes: the end of the critical
	// section its fault struck in. The schedule arms it only once the
	// write is held (strike), so an earlier write's completion cannot end
	// it: armed while a write was in flight, the schedule once saw that
	// write complete first and healed a delay 0.2ms after injecting it.
	var mu sync.Mutex
	leave := map[int]chan struct{}{}
	watch := func(e history.Event) {
		if e.Op != history.OpWrite || e.Type == history.Invoke {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ch, ok := leave[e.Process]; ok {
			close(ch)
			delete(leave, e.Process)
		}
	}
	arm := func(client int) <-chan struct{} {
		ch := make(chan struct{})
		mu.Lock()
		leave[client] = ch
		mu.Unlock()
		return ch
	}
	for _, c := range r.clients {
		c.SetRecorder(rec, watch)
	}
	defer func() {
		for _, c := range r.clients {
			c.SetRecorder(rec, nil)
		}
	}()

	loop := protocol.Loop{
		Duration: loopDuration(g, tr.Plan, settle), MaxCycles: g.MaxCycles,
		Work: g.Work.Duration, WorkDist: g.WorkDist, Backoff: g.Backoff.Duration,
	}
	loopsDone := make(chan struct{})
	var schedErr error
	schedDone := make(chan struct{})
	loopsFrom := time.Now()
	var quiet time.Time // when the struck faults have run their course
	var struck []struckFault
	go func() {
		defer close(schedDone)
		struck, quiet, schedErr = t.strike(ctx, g, tr.Plan, loopsDone, arm)
		tr.Injected = len(struck)
	}()
	// The loops are timed for the latest a fault may strike (loopDuration);
	// once the schedule is done and its faults have run their course and
	// settled, they are stopped: a fault that struck early leaves no idle
	// looping behind it.
	stopErr := make(chan error, 1)
	go func() {
		select {
		case <-schedDone:
		case <-loopsDone:
			stopErr <- nil
			return
		}
		stopAt := loopsFrom.Add(g.Duration.Duration)
		if at := quiet.Add(settle); at.After(stopAt) {
			stopAt = at
		}
		select {
		case <-time.After(time.Until(stopAt)):
		case <-loopsDone:
			stopErr <- nil
			return
		case <-ctx.Done():
			stopErr <- nil
			return
		}
		var errs []error
		for _, c := range r.clients {
			if err := c.StopLoop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("client %d: stopping its loop: %w", c.ID, err))
			}
		}
		stopErr <- errors.Join(errs...)
	}()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	aimed := aimedAt(tr.Plan)
	for id, c := range r.clients {
		l := loop
		l.Seed, l.Prompt = seed+uint64(id), aimed[id]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Loop(ctx, r.sc.Key, ttl, l); err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("client %d: %w", c.ID, err))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(loopsDone)
	<-schedDone
	if err := <-stopErr; err != nil {
		errs = append(errs, err)
	}
	r.worst, r.worstAt = guard.Stop()
	r.storyTo = rec.Now()
	r.cpuTo, _ = cpuStall()
	if err := r.healAll(ctx); err != nil {
		errs = append(errs, err)
	}
	if schedErr != nil {
		errs = append(errs, schedErr)
	}
	if len(errs) > 0 {
		return nil, harness("trial: %v", errors.Join(errs...))
	}
	tr.Events = rec.Events()
	margin := trialMargin(r.sc.Margin.Duration, ttl)
	stalls := r.clientStalls()
	why, stalled := tooSlow(r.worst, r.worstAt, margin)
	if !stalled {
		why, stalled = clientTooSlow(stalls, r.paused, margin, rec.Base())
	}
	tr.Machine = r.machine(stalls, margin, why)
	tr.Machine.Stalled = stalled
	tr.Struck = measure(struck, tr.Events, stalls, g)
	for _, s := range tr.Struck {
		if off := s.Off(ttl); off != "" && tr.Machine.OffPlan == "" {
			tr.Machine.OffPlan = off
		}
	}
	if tr.Machine.OffPlan == "" {
		tr.Machine.OffPlan = escaped(tr.Plan, tr.Struck)
	}
	if tr.Machine.OffPlan == "" {
		tr.Machine.OffPlan = slowWrite(tr.Events, tr.Struck, g, margin)
	}
	var err error
	if tr.Check, err = Verdict(r.sc, tr.Events, &tr.Machine, nil); err != nil {
		return nil, harness("the trial's history breaks the recording's rules: %v", err)
	}
	tr.Wall = time.Since(started)
	return tr, nil
}

// strike carries out the plan: for each fault, wait until its time, then
// (for client faults) hold its client's next write after its read, at
// most armWait after its time, inject the fault and let the write go on.
// The fault so strikes inside the critical section whatever the machine's
// load: struck when the write's invocation arrived, a pause reached the
// worker after its 1-3ms of work in 1 of about 40 trials on an idle
// machine, and the trial counted as safe a pause of 3 TTLs that had missed
// the critical section. A latency is healed when the held write completes
// (leave); every other fault is healed with the trial. It returns how
// many faults struck, and quiet: when the last of them has run its course
// (a pause ended, a delayed write landed).
func (t *Trials) strike(ctx context.Context, g scenarios.Generator, plan []Planned, loopsDone <-chan struct{}, leave func(int) <-chan struct{}) (struck []struckFault, quiet time.Time, err error) {
	r := t.r
	start := time.Now()
	for _, p := range plan {
		select {
		case <-time.After(time.Until(start.Add(p.At))):
		case <-loopsDone:
			return struck, quiet, nil
		case <-ctx.Done():
			return struck, quiet, ctx.Err()
		}
		gen := scenarios.Generator{Fault: p.Fault}.Generated()
		if gen == nil {
			return struck, quiet, fmt.Errorf("the generator does not know fault %q", p.Fault)
		}
		f := gen.Build(nemesis.Aim{Client: p.Client, Node: p.Node}, p.drawn(gen))
		var left <-chan struct{}
		var c *worker.Client // the client whose write is held
		if !gen.Whole {
			c = r.clients[p.Client]
			if c == nil {
				return struck, quiet, fmt.Errorf("the plan aims at client %d, which the trial does not have", p.Client)
			}
			held := make(chan error, 1)
			go func() { held <- c.Hold(ctx) }()
			select {
			case err := <-held:
				if err != nil {
					continue // the loop ended before another write: it escapes
				}
			case <-time.After(time.Until(start.Add(p.At + armWait(g)))):
				// Its client did not enter a critical section in time: it
				// escapes (a write held as the schedule gave up goes on).
				c.Resume()
				<-held
				continue
			case <-loopsDone:
				return struck, quiet, nil
			case <-ctx.Done():
				return struck, quiet, ctx.Err()
			}
			left = leave(p.Client)
		}
		err := r.inject(ctx, f)
		if c != nil {
			c.Resume()
		}
		if err != nil {
			return struck, quiet, err
		}
		struck = append(struck, struckFault{p: p, fault: f, at: r.rec.Now()})
		course := time.Now()
		if gen.Outlasts != nil {
			course = course.Add(gen.Outlasts(p.Size))
		}
		if gen.UntilSectionEnds {
			select {
			case <-left:
			case <-loopsDone:
			case <-ctx.Done():
				return struck, quiet, ctx.Err()
			}
			if err := r.heal(ctx, func(g nemesis.Fault) bool { return g == f }); err != nil {
				return struck, quiet, err
			}
			course = time.Now()
		}
		if course.After(quiet) {
			quiet = course
		}
	}
	return struck, quiet, nil
}

// aimedAt lists the clients whose critical sections the plan aims a fault
// at: the schedule must see their writes as they happen (Loop.Prompt).
func aimedAt(plan []Planned) map[int]bool {
	out := map[int]bool{}
	for _, p := range plan {
		if gen := (scenarios.Generator{Fault: p.Fault}).Generated(); gen != nil && !gen.Whole {
			out[p.Client] = true
		}
	}
	return out
}

// runGenerated is Run for a generator scenario: it plays the generator's
// Trials trials on one environment, each left unknown played again up to
// UnknownTries in all, and keeps, as the run's history, the first trial
// whose verdict is not safe (else the last).
func runGenerated(ctx context.Context, sc *scenarios.Scenario, o Options, started time.Time) (*Outcome, error) {
	dir, err := claimRunDir(sc, o)
	if err != nil {
		return nil, err
	}
	spec, err := clients.Lookup(sc.Lock)
	if err != nil {
		return nil, harness("%v", err)
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintf(log, "%s: %s (seed %d): %d client(s) loop on %s (%s) for %v a trial, %d trial(s)\n",
		sc.Name, sc.Title, o.Seed, sc.Clients, sc.Lock, spec.Backend, sc.Generator.Duration, sc.Generator.Trials)
	t, err := OpenTrials(ctx, sc, o)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var kept *Trial
	for i := 0; i < sc.Generator.Trials; i++ {
		tr, tries, err := PlayTries(ctx, UnknownTries, func() (*Trial, error) {
			return t.Play(ctx, *sc.Generator, sc.TTL.Duration, TrialSeed(o.Seed, 0, i))
		})
		if err != nil {
			return nil, err
		}
		if tries > 1 {
			fmt.Fprintf(log, "  trial %d: played %d times: the machine was too slow for the first\n", i+1, tries)
		}
		for _, p := range tr.Plan {
			fmt.Fprintf(log, "  trial %d: %s\n", i+1, p)
		}
		fmt.Fprintf(log, "  trial %d: %s (%d critical sections, %v)\n", i+1, tr.Check.Summary, tr.Check.Mutex.Holds, tr.Wall.Round(time.Millisecond))
		if kept == nil || checker.Rank(tr.Check.Verdict) > checker.Rank(kept.Check.Verdict) {
			kept = tr
		}
	}
	f, err := dir.Create(outdir.HistoryFile)
	if err != nil {
		return nil, harness("run directory: %v", err)
	}
	werr := history.Write(f, kept.Events)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, harness("writing history: %v", werr)
	}
	return &Outcome{
		Scenario: sc, Dir: o.Out, Seed: o.Seed, Expected: o.Expected,
		Check: kept.Check, Events: kept.Events, Duration: time.Since(started),
		Machine: &kept.Machine, Backend: t.r.host().Name, Images: t.r.images(),
	}, nil
}
