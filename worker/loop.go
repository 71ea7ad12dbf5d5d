// loop.go is generator mode inside the worker: the `loop` command runs
// acquire -> read-modify-write -> release cycles back to back in the client
// process itself, so that a cycle costs the lock's and the storage's round
// trips and nothing more (no harness round trip per operation). Every
// operation is still recorded as history events, streamed to the harness
// as they happen, so the harness can aim a fault at a critical section.

package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
)

// draw returns one work time from l's distribution (Loop.WorkDist).
func draw(l protocol.Loop, rng *rand.Rand) time.Duration {
	switch l.WorkDist {
	case "fixed":
		return l.Work
	case "exponential":
		return time.Duration(rng.ExpFloat64() * float64(l.Work))
	}
	if l.Work <= 0 {
		return 0
	}
	return l.Work/2 + time.Duration(rng.Int64N(int64(l.Work)+1))
}

// loop runs cycles until Duration or MaxCycles. The write of a cycle is
// made only when the acquire was granted; a lease is always released.
func (s *state) loop(ctx context.Context, c protocol.Command) error {
	if c.Loop == nil {
		return errors.New("loop without config")
	}
	l := *c.Loop
	s.outMu.Lock()
	s.lazyWrites = !l.Prompt
	s.outMu.Unlock()
	defer func() {
		s.outMu.Lock()
		s.lazyWrites = false
		s.outMu.Unlock()
		s.dropHold("the loop ended before another write")
	}()
	rng := rand.New(rand.NewPCG(l.Seed, l.Seed^0x9e3779b97f4a7c15))
	deadline := time.Now().Add(l.Duration)
	cycles := 0
	for time.Now().Before(deadline) && (l.MaxCycles == 0 || cycles < l.MaxCycles) && !s.stopLoop.Load() {
		s.acquire(ctx, protocol.Command{ID: c.ID, Op: history.OpAcquire, Key: c.Key, TTL: c.TTL})
		if _, held := s.lease(c.Key); !held {
			if l.Backoff > 0 {
				time.Sleep(time.Duration(rng.Int64N(int64(l.Backoff) + 1)))
			}
			continue
		}
		cycles++
		if s.store != nil {
			s.write(ctx, protocol.Command{ID: c.ID, Op: history.OpWrite, Key: c.Key, Work: draw(l, rng)})
		}
		s.release(ctx, protocol.Command{ID: c.ID, Op: history.OpRelease, Key: c.Key})
	}
	return nil
}

// Loop runs a generator loop on the worker and waits for it to finish.
func (c *Client) Loop(ctx context.Context, key string, ttl time.Duration, l protocol.Loop) error {
	return c.Do(ctx, protocol.Command{Op: protocol.OpLoop, Key: key, TTL: ttl, Loop: &l})
}

// StopLoop ends the worker's running loop after its current cycle and
// returns once it has (at once when none runs). Loop, waiting in another
// goroutine, then returns too.
func (c *Client) StopLoop(ctx context.Context) error {
	return c.Do(ctx, protocol.Command{Op: protocol.OpStopLoop})
}

// Hold stops the running loop's next write after its read, before its
// work, and returns once it has: the write's invocation is recorded and
// its client is inside its critical section. It fails when Resume came
// first or the loop ended before another write. Resume must follow.
func (c *Client) Hold(ctx context.Context) error {
	return c.Do(ctx, protocol.Command{Op: protocol.OpHold})
}

// Resume lets a held write go on, or takes back a hold not reached yet. It
// does not wait for the worker's reply: a paused worker reads the command
// once it is continued.
func (c *Client) Resume() {
	c.Send(protocol.Command{Op: protocol.OpResume})
}

// armHold makes the loop's next write wait (protocol.OpHold); the hold
// command id is done once it does. A hold armed before replaces the older one, which
// fails.
func (s *state) armHold(id int64) {
	s.dropHold("another hold replaced it")
	s.holdMu.Lock()
	s.holdID = id
	s.holdMu.Unlock()
}

// dropHold fails a hold not reached yet, with why.
func (s *state) dropHold(why string) {
	s.holdMu.Lock()
	id := s.holdID
	s.holdID = 0
	s.holdMu.Unlock()
	if id != 0 {
		s.send(protocol.Reply{ID: id, Done: true, Error: why})
	}
}

// resumeHold lets a held write go on (protocol.OpResume), or fails a hold
// not reached yet.
func (s *state) resumeHold() {
	s.dropHold("resumed before a write was held")
	s.holdMu.Lock()
	if s.resume != nil {
		close(s.resume)
		s.resume = nil
	}
	s.holdMu.Unlock()
}

// held waits, when a hold is armed, until the harness resumes the write:
// it tells the harness the write is held (the hold command is done) and
// waits for protocol.OpResume.
func (s *state) held() {
	s.holdMu.Lock()
	id := s.holdID
	if id == 0 {
		s.holdMu.Unlock()
		return
	}
	s.holdID = 0
	resume := make(chan struct{})
	s.resume = resume
	s.holdMu.Unlock()
	s.send(protocol.Reply{ID: id, Done: true})
	<-resume
}

// SetRecorder sends the worker's events to rec from now on, so that one
// set of worker processes serves many trials, each with its own history.
// Call it only while the worker is idle. watch, when not nil, sees every
// event as it is recorded (the generator aims its faults with it); it runs
// on the reading goroutine and must not block.
func (c *Client) SetRecorder(rec *history.Recorder, watch func(history.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rec, c.watch = rec, watch
}

// sink is where the next event goes.
func (c *Client) sink() (*history.Recorder, func(history.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec, c.watch
}
