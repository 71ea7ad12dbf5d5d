// Package worker is the client process: the sim binary re-executed with
// LOCKSIM_WORKER=1 runs one lock client, reads commands as JSON lines on
// stdin and answers with history events on stdout, each stamped with
// CLOCK_MONOTONIC. Because a client is a whole OS process, a pause is a
// real SIGSTOP: its timers and its watchdog stop with it. The harness's
// handle on a client process, this one or a program in another language,
// is here too (start.go, handle.go); the lines they exchange are package
// protocol's.
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
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/storage"
)

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
			s.send(protocol.Reply{Stall: &protocol.Stall{From: from, To: to}})
		}
	})
}

// MaybeRun turns this process into a worker when LOCKSIM_WORKER=1, and
// never returns in that case: it prints its hello line (goHello), then
// serves. main and TestMain call it first.
func MaybeRun() {
	if os.Getenv(protocol.EnvWorker) != "1" {
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

// goHello is the hello of the harness's own worker: every registered lock
// and every command.
func goHello() protocol.Hello {
	h := protocol.Hello{Protocol: protocol.ProtocolVersion, Name: "locksim Go worker", Locks: clients.Names(), Ops: protocol.Ops,
		Fences: protocol.Fences, Watchdogs: protocol.Watchdogs,
		CheckLease: true, ClientClock: true, AcquireWait: true}
	for _, m := range storage.Modes() {
		h.StorageModes = append(h.StorageModes, string(m))
	}
	return h
}

// writeHello prints the harness's own worker's hello line.
func writeHello(w io.Writer) error {
	b, err := json.Marshal(goHello())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// state is one worker's lock client and its current leases.
type state struct {
	init  protocol.Init
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
	// (protocol.OpStopLoop).
	stopLoop atomic.Bool
	// holdID is the hold command waiting for the loop's next write (0:
	// none); resume, while a write is held, lets it go on (protocol.OpHold,
	// protocol.OpResume; holdMu guards both).
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
func (s *state) send(r protocol.Reply) {
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
	s.send(protocol.Reply{ID: id, Event: &e})
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
		var c protocol.Command
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			s.send(protocol.Reply{Done: true, Error: fmt.Sprintf("bad command: %v", err)})
			continue
		}
		switch {
		case c.Op == protocol.OpStopLoop:
			// The running loop ends after its current cycle; its own
			// done goes out first.
			s.stopLoop.Store(true)
			s.resumeHold() // a held write would never end its cycle
			loops.Wait()
			s.send(protocol.Reply{ID: c.ID, Done: true})
			continue
		case c.Op == protocol.OpHold:
			// Done once the loop's next write is held.
			s.armHold(c.ID)
			continue
		case c.Op == protocol.OpResume:
			s.resumeHold()
			s.send(protocol.Reply{ID: c.ID, Done: true})
			continue
		case c.Op == protocol.OpLoop:
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
		s.send(protocol.Reply{Done: true, Error: fmt.Sprintf("reading commands: %v", err)})
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
func (s *state) reply(c protocol.Command, err error) {
	if err != nil {
		s.send(protocol.Reply{ID: c.ID, Done: true, Error: err.Error()})
		return
	}
	s.send(protocol.Reply{ID: c.ID, Done: true})
}

func (s *state) do(ctx context.Context, c protocol.Command) error {
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
	case protocol.OpLoop:
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

func (s *state) acquire(ctx context.Context, c protocol.Command) {
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

func (s *state) release(ctx context.Context, c protocol.Command) {
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

func (s *state) extend(ctx context.Context, c protocol.Command) {
	l, ok := s.lease(c.Key)
	s.event(c.ID, history.Event{Type: history.Invoke, Op: history.OpExtend, Key: c.Key, Token: l.Token, TTL: int64(c.TTL)})
	if !ok {
		s.noLease(c.ID, history.OpExtend, c.Key)
		return
	}
	nl, err := s.lock.Extend(ctx, l, c.TTL)
	done := history.Event{Op: history.OpExtend, Key: c.Key, Token: l.Token}
	refused(&done, err)
	switch {
	case err == nil:
		s.setLease(nl)
		done.LeaseEnd, done.Nodes, done.TTL = s.leaseEnd(nl), nl.Nodes, serverTTL(nl, c.TTL)
	case done.Reason == history.ReasonNotHeld:
		// The servers said the lease is gone: the client's belief ends
		// here, as it does when its watchdog hears the same.
		s.dropLease(l.Key, l.Token)
	}
	s.event(c.ID, done)
}
