// Package worker is the client process: the sim binary re-executed with
// LOCKSIM_WORKER=1 runs one lock client, reads commands as JSON lines on
// stdin and answers with history events on stdout, each stamped with
// CLOCK_MONOTONIC. Because a client is a whole OS process, a pause is a
// real SIGSTOP: its timers and its watchdog stop with it.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/storage"
)

// EnvVar marks a process as a worker.
const EnvVar = "LOCKSIM_WORKER"

// Command is one line from the harness to a worker.
type Command struct {
	// ID ties replies to the command.
	ID int64 `json:"id"`
	// Op is init, acquire, release, extend or write (v2); the harness
	// sends loop, stop-loop, hold and resume (loop.go) to its own worker
	// only.
	Op string `json:"op"`
	// Key is the lock key.
	Key string `json:"key,omitempty"`
	// TTL is the lease time asked for by acquire and extend.
	TTL time.Duration `json:"ttl,omitempty"`
	// Wait lets an acquire wait up to this long for a held lock, as its
	// lock waits (clients.Waiter), instead of trying once (v2).
	Wait time.Duration `json:"wait,omitempty"`
	// Work is how long a write works between its read and its write.
	Work time.Duration `json:"work,omitempty"`
	// Unlocked lets a write go ahead without a lease (a story about an
	// unlocked write); otherwise a write, extend or release without a
	// lease is refused with no I/O.
	Unlocked bool `json:"unlocked,omitempty"`
	// StopAfterCheck makes a write stop its own process (SIGSTOP) right
	// after its lease check has passed, and before it writes, once it has
	// sent a check note (history.OpCheck): the story anchored a pause on
	// that moment, and the harness resumes the process (a write only, with
	// Init.CheckLease; the harness sends it to its own worker only).
	StopAfterCheck bool `json:"stop_after_check,omitempty"`
	// Period makes a write one run of a scheduled job for this period:
	// right after its read, before its work, it writes the row (job,
	// period) to the storage's job table (storage.RecordJob), the run's
	// first effect, which the checker counts (the harness sends it to its
	// own worker only).
	Period string `json:"period,omitempty"`
	// Init configures the worker (op init only).
	Init *Init `json:"init,omitempty"`
	// Loop configures a generator loop (op loop only, sent to the
	// harness's own worker only; see loop.go).
	Loop *Loop `json:"loop,omitempty"`
}

// Init is what a worker needs to build its lock client and reach storage.
type Init struct {
	// Lock names a registered lock algorithm.
	Lock string `json:"lock"`
	// Config is the lock's connection config, as this client reaches it.
	Config clients.Config `json:"config"`
	// Storage is the protected resource's connection string ("": none).
	Storage string `json:"storage,omitempty"`
	// StorageMode is one of storage.Modes: plain, fenced, fenced-write,
	// token-cas or idempotent.
	StorageMode storage.Mode `json:"storage_mode,omitempty"`
	// Fence names the fencing-token source: "" (none), or one of
	// clients.FencePostgres (a sequence, through Storage), FenceRedisIncr
	// or FenceRedlockIncr (INCR on the Redis nodes).
	Fence string `json:"fence,omitempty"`
	// Watchdog renews every lease in the background: "" (no), "token"
	// (only while the key holds this lease's token) or "pexpire" (plain
	// PEXPIRE on the key, whoever holds it).
	Watchdog string `json:"watchdog,omitempty"`
	// WatchdogEvery is how often the watchdog renews.
	WatchdogEvery time.Duration `json:"watchdog_every,omitempty"`
	// WatchdogMax bounds the watchdog to that many renewals of a lease
	// (0: none). Sent to the harness's own worker only.
	WatchdogMax int `json:"watchdog_max,omitempty"`
	// ClockFile is the control file of this client's wall clock (see
	// nemesis/clockshim), so a fault can jump it. Empty: the real clock.
	ClockFile string `json:"clock_file,omitempty"`
	// CheckLease makes a write check, just before writing, that the lease
	// is still valid as the lock measures it, and not write if it is not.
	CheckLease bool `json:"check_lease,omitempty"`
}

// Reply is one line from a worker to the harness.
type Reply struct {
	// ID is the command this reply belongs to.
	ID int64 `json:"id"`
	// Event is a history event whose Time is an absolute CLOCK_MONOTONIC
	// reading; the harness rebases it and sets Process.
	Event *history.Event `json:"event,omitempty"`
	// Done says the command is finished.
	Done bool `json:"done,omitempty"`
	// Error is set when the command could not be carried out at all (bad
	// command, init failure): a harness error, not an operation outcome.
	Error string `json:"error,omitempty"`
	// Stall, sent on its own, says the worker did not run for a while
	// (CLOCK_MONOTONIC readings): the machine was too busy, or the worker
	// was paused (SIGSTOP) on purpose, which the harness tells apart.
	Stall *Stall `json:"stall,omitempty"`
}

// Stall is a span in which the worker did not run.
type Stall struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// stallTick is how often the worker checks that it runs; a span from one
// wake-up to the next longer than StallReport is reported. It is short
// because a generator trial's lease is (runner.MinTrialMargin).
const (
	stallTick   = 10 * time.Millisecond
	StallReport = 20 * time.Millisecond
)

// WatchStalls wakes every tick until stop is closed and hands report
// each span, on CLOCK_MONOTONIC, from one wake-up to the next: a span much
// longer than tick is a time in which this process did not run. The
// worker and the harness's timing guard both watch themselves with it.
func WatchStalls(stop <-chan struct{}, tick time.Duration, report func(from, to int64)) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := history.Monotonic()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			now := history.Monotonic()
			report(last, now)
			last = now
		}
	}
}

// watchStalls reports to the harness every span longer than StallReport
// in which this process did not run, until stop is closed.
func (s *state) watchStalls(stop <-chan struct{}) {
	WatchStalls(stop, stallTick, func(from, to int64) {
		if time.Duration(to-from) > StallReport {
			s.send(Reply{Stall: &Stall{From: from, To: to}})
		}
	})
}

// MaybeRun turns this process into a worker when LOCKSIM_WORKER=1, and
// never returns in that case: it prints its hello line (protocol.go),
// then serves. main and TestMain call it first.
func MaybeRun() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	// A client runs one operation at a time: one thread for Go code
	// spares it the wake-ups of idle threads (futex, epoll) that cost
	// more than the operation on a busy machine (GOMAXPROCS overrides).
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// The first line is the hello of locksim worker protocol v2
	// (docs/protocol.md).
	if err := writeHello(os.Stdout); err != nil {
		os.Exit(1)
	}
	os.Exit(Serve(os.Stdin, os.Stdout))
}

// state is one worker's lock client and its current leases.
type state struct {
	init  Init
	lock  clients.Lock
	store *storage.Store
	// leases are the leases held, by key; the watchdog renews them and
	// drops one when a renewal finds it gone (leaseMu guards them).
	leaseMu sync.Mutex
	leases  map[string]clients.Lease
	out     *json.Encoder
	buf     *bufio.Writer
	outMu   sync.Mutex
	// lastID is the command whose first reply was last sent.
	lastID int64
	// lazyWrites buffers a write's events as the rest: a generator loop
	// no fault is aimed at (Loop.Prompt).
	lazyWrites bool
	// commits holds, for a postgres-xact lease, the completion of the
	// write made inside its transaction: it is only known at commit.
	commits map[string]history.Event
	// dogs stops each lease's watchdog.
	dogs map[string]func()
	// wall is the client's wall clock (Init.ClockFile, or time.Now).
	wall func() time.Time
	// realMono maps an instant of the client's lease clock
	// (clients.Monotonic) to the real CLOCK_MONOTONIC the history is
	// written in, at the clock's rate now (identity without ClockFile).
	realMono func(int64) int64
	// stopLoop ends the running generator loop after its current cycle
	// (OpStopLoop).
	stopLoop atomic.Bool
	// holdID is the hold command waiting for the loop's next write (0:
	// none); resume, while a write is held, lets it go on (OpHold,
	// OpResume; holdMu guards both).
	holdMu sync.Mutex
	holdID int64
	resume chan struct{}
}

// send writes a reply. Replies the harness acts on go out at once: the
// first of a command (it tells the harness the command has begun), a
// write's events (generator mode aims faults at critical sections), and
// the end of a command. The rest (acquires, releases, renewals in a
// generator loop, and its writes unless Loop.Prompt) are buffered and
// flushed within flushEvery, which saves a system call per event where
// throughput is measured.
func (s *state) send(r Reply) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(r)
	urgent := r.Done || r.Error != "" || r.ID != s.lastID || (r.Event != nil && r.Event.Op == history.OpWrite && !s.lazyWrites) ||
		(r.Event != nil && r.Event.Op == history.OpCheck)
	s.lastID = r.ID
	if urgent {
		_ = s.buf.Flush()
	}
}

// flushEvery bounds how long a buffered reply waits.
const flushEvery = 5 * time.Millisecond

// flusher flushes buffered replies every flushEvery until stop is closed.
func (s *state) flusher(stop <-chan struct{}) {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.outMu.Lock()
			_ = s.buf.Flush()
			s.outMu.Unlock()
		}
	}
}

func (s *state) event(id int64, e history.Event) {
	if e.Time == 0 {
		e.Time = history.Monotonic()
	}
	s.send(Reply{ID: id, Event: &e})
}

// Serve runs the command loop until stdin closes; it returns the exit code.
func Serve(in io.Reader, out io.Writer) int {
	buf := bufio.NewWriterSize(out, 64*1024)
	s := &state{leases: map[string]clients.Lease{}, out: json.NewEncoder(buf), buf: buf,
		commits: map[string]history.Event{}, dogs: map[string]func(){}}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	defer func() {
		// Nothing writes to out once Serve returns, and nothing
		// buffered is lost.
		close(stop)
		bg.Wait()
		s.outMu.Lock()
		_ = s.buf.Flush()
		s.outMu.Unlock()
	}()
	bg.Add(2)
	go func() { defer bg.Done(); s.flusher(stop) }()
	go func() { defer bg.Done(); s.watchStalls(stop) }()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var loops sync.WaitGroup // the generator loop running, if any
	for sc.Scan() {
		var c Command
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			s.send(Reply{Done: true, Error: fmt.Sprintf("bad command: %v", err)})
			continue
		}
		switch {
		case c.Op == OpStopLoop:
			// The running loop ends after its current cycle; its own
			// done goes out first.
			s.stopLoop.Store(true)
			s.resumeHold() // a held write would never end its cycle
			loops.Wait()
			s.send(Reply{ID: c.ID, Done: true})
			continue
		case c.Op == OpHold:
			// Done once the loop's next write is held.
			s.armHold(c.ID)
			continue
		case c.Op == OpResume:
			s.resumeHold()
			s.send(Reply{ID: c.ID, Done: true})
			continue
		case c.Op == OpLoop:
			// A loop runs while the worker reads on, so that a stop can
			// end it early; any other command waits for it.
			loops.Wait()
			s.stopLoop.Store(false)
			loops.Add(1)
			go func() {
				defer loops.Done()
				s.reply(c, s.do(context.Background(), c))
			}()
			continue
		}
		loops.Wait()
		s.reply(c, s.do(context.Background(), c))
	}
	loops.Wait()
	if err := sc.Err(); err != nil {
		s.send(Reply{Done: true, Error: fmt.Sprintf("reading commands: %v", err)})
	}
	for _, stop := range s.dogs {
		stop()
	}
	if s.lock != nil {
		_ = s.lock.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
	return 0
}

// reply ends command c: done, with err when it could not be carried out.
func (s *state) reply(c Command, err error) {
	if err != nil {
		s.send(Reply{ID: c.ID, Done: true, Error: err.Error()})
		return
	}
	s.send(Reply{ID: c.ID, Done: true})
}

func (s *state) do(ctx context.Context, c Command) error {
	if c.Op == "init" {
		if c.Init == nil {
			return errors.New("init without config")
		}
		spec, err := clients.Lookup(c.Init.Lock)
		if err != nil {
			return err
		}
		return s.setup(ctx, spec, *c.Init)
	}
	if s.lock == nil {
		return fmt.Errorf("%s before init", c.Op)
	}
	switch c.Op {
	case history.OpAcquire:
		s.acquire(ctx, c)
	case history.OpRelease:
		s.release(ctx, c)
	case history.OpExtend:
		s.extend(ctx, c)
	case history.OpWrite:
		s.write(ctx, c)
	case OpLoop:
		return s.loop(ctx, c)
	default:
		return fmt.Errorf("unknown op %q", c.Op)
	}
	return nil
}

// outcome maps an operation's error to how it completed: a certain
// refusal is Fail, anything else (a timeout, a reset) is Info: unknown.
func outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.Ok
	case errors.Is(err, clients.ErrNotAcquired), errors.Is(err, clients.ErrNotHeld):
		return history.Fail
	default:
		return history.Info
	}
}

// lease returns the lease held on key, if any.
func (s *state) lease(key string) (clients.Lease, bool) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l, ok := s.leases[key]
	return l, ok
}

func (s *state) setLease(l clients.Lease) {
	s.leaseMu.Lock()
	s.leases[l.Key] = l
	s.leaseMu.Unlock()
}

// dropLease forgets the lease on key if it is still the one with token.
func (s *state) dropLease(key, token string) {
	s.leaseMu.Lock()
	if l, ok := s.leases[key]; ok && l.Token == token {
		delete(s.leases, key)
	}
	s.leaseMu.Unlock()
}

// leaseEnd is the real CLOCK_MONOTONIC instant until which the client
// believes it holds l (0: until it releases it), as its clocks run now: a
// lease timed by the wall clock ends when the client's wall clock reaches
// its deadline, one timed by the client's monotonic clock when that clock
// reaches Start + Validity (a drift moves both).
func (s *state) leaseEnd(l clients.Lease) int64 {
	switch {
	case s.init.Watchdog != "":
		// With a watchdog the client believes it holds the lock until
		// it releases it, or a renewal finds it gone: that belief is
		// what a pause breaks.
		return 0
	case !l.Deadline.IsZero():
		return s.real(clients.Monotonic() + int64(l.Deadline.Sub(s.wall())))
	case l.Validity == 0:
		return 0
	}
	return s.real(l.Start + int64(l.Validity))
}

// real maps an instant of the client's lease clock to the machine's
// CLOCK_MONOTONIC (realMono; identity when it is not set).
func (s *state) real(m int64) int64 {
	if s.realMono == nil {
		return m
	}
	return s.realMono(m)
}

// serverTTL is the expiry the lock server applies to a lease asked for
// ttl: none for a lock without expiry (a session or transaction lock).
func serverTTL(l clients.Lease, ttl time.Duration) int64 {
	if l.Validity == 0 && l.Deadline.IsZero() {
		return 0
	}
	return int64(ttl)
}

// refused fills a completion's type, reason and detail from err.
func refused(done *history.Event, err error) {
	done.Type = outcome(err)
	if err != nil {
		done.Reason, done.Detail = clients.ReasonOf(err), err.Error()
	}
}

// noLease completes an operation the worker refuses because the client
// holds no lease: no request is sent.
func (s *state) noLease(id int64, op, key string) {
	s.event(id, history.Event{Type: history.Fail, Op: op, Key: key, Reason: history.ReasonNoLease,
		Detail: "refused by the client: it holds no lease, so it sends nothing"})
}

func (s *state) acquire(ctx context.Context, c Command) {
	s.event(c.ID, history.Event{Type: history.Invoke, Op: history.OpAcquire, Key: c.Key, TTL: int64(c.TTL)})
	var l clients.Lease
	var err error
	if c.Wait > 0 {
		w, ok := s.lock.(clients.Waiter)
		if !ok {
			err = fmt.Errorf("lock %s does not wait for a held lock", s.init.Lock)
		} else {
			l, err = w.AcquireWait(ctx, c.Key, c.TTL, c.Wait)
		}
	} else {
		l, err = s.lock.Acquire(ctx, c.Key, c.TTL)
	}
	done := history.Event{Op: history.OpAcquire, Key: c.Key, Nodes: l.Nodes}
	refused(&done, err)
	if err == nil {
		s.setLease(l)
		done.Token, done.Fence, done.LeaseEnd, done.TTL = l.Token, l.Fence, s.leaseEnd(l), serverTTL(l, c.TTL)
		if s.init.Watchdog != "" {
			s.dogs[c.Key] = s.startWatchdog(c.ID, l, c.TTL)
		}
	}
	s.event(c.ID, done)
}

func (s *state) release(ctx context.Context, c Command) {
	l, ok := s.lease(c.Key)
	if _, pending := s.commits[c.Key]; !pending {
		s.event(c.ID, history.Event{Type: history.Invoke, Op: history.OpRelease, Key: c.Key, Token: l.Token})
	}
	if stop, ok := s.dogs[c.Key]; ok {
		stop()
		delete(s.dogs, c.Key)
	}
	if !ok {
		s.noLease(c.ID, history.OpRelease, c.Key)
		return
	}
	s.dropLease(c.Key, l.Token)
	err := s.lock.Release(ctx, l)
	if _, pending := s.commits[c.Key]; pending {
		// postgres-xact: the release is the commit that settles the
		// write; record the write's outcome first, then the release.
		s.settleCommit(c.ID, c.Key, err)
		s.event(c.ID, history.Event{Type: history.Invoke, Op: history.OpRelease, Key: c.Key, Token: l.Token})
	}
	done := history.Event{Op: history.OpRelease, Key: c.Key, Token: l.Token}
	refused(&done, err)
	s.event(c.ID, done)
}

func (s *state) extend(ctx context.Context, c Command) {
	l, ok := s.lease(c.Key)
	s.event(c.ID, history.Event{Type: history.Invoke, Op: history.OpExtend, Key: c.Key, Token: l.Token, TTL: int64(c.TTL)})
	if !ok {
		s.noLease(c.ID, history.OpExtend, c.Key)
		return
	}
	nl, err := s.lock.Extend(ctx, l, c.TTL)
	done := history.Event{Op: history.OpExtend, Key: c.Key, Token: l.Token}
	refused(&done, err)
	if err == nil {
		s.setLease(nl)
		done.LeaseEnd, done.Nodes, done.TTL = s.leaseEnd(nl), nl.Nodes, serverTTL(nl, c.TTL)
	}
	s.event(c.ID, done)
}
