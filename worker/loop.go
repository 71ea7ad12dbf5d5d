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
)

// OpLoop is the command that runs a generator loop (Command.Loop);
// OpStopLoop ends the running one after its current cycle, before its
// Duration: the harness stops the loops once the trial's faults have run
// their course, so that a loop timed for a fault that could strike late
// does not run on idle when it struck early. OpHold stops the loop's next
// write after its read, before its work, and is done once it has; OpResume
// lets that write go on (or takes back a hold not reached yet): the
// harness strikes a fault while the write is held, so the fault always
// lands inside the critical section.
const (
	OpLoop     = "loop"
	OpStopLoop = "stop-loop"
	OpHold     = "hold"
	OpResume   = "resume"
)

// Loop configures one generator loop.
type Loop struct {
	// Duration bounds the loop: no cycle starts after it has passed (a
	// cycle under way when it passes, a paused one included, finishes).
	Duration time.Duration `json:"duration"`
	// MaxCycles stops the loop after that many critical sections (0: no
	// limit).
	MaxCycles int `json:"max_cycles,omitempty"`
	// Work is the mean work time inside the critical section.
	Work time.Duration `json:"work,omitempty"`
	// WorkDist is uniform (Work/2 to 3*Work/2), exponential (mean Work) or
	// fixed.
	WorkDist string `json:"work_dist,omitempty"`
	// Backoff bounds the wait after a refused acquire (drawn uniformly
	// from 0 to Backoff), so contending clients do not spin in step.
	Backoff time.Duration `json:"backoff,omitempty"`
	// Seed seeds the work and backoff draws.
	Seed uint64 `json:"seed"`
	// Prompt sends each write's events at once, for a harness that aims
	// a fault at this client's critical sections; without it they are
	// buffered as the rest (state.send).
	Prompt bool `json:"prompt,omitempty"`
}

// Draw returns one work time from the loop's distribution.
func (l Loop) Draw(rng *rand.Rand) time.Duration {
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
func (s *state) loop(ctx context.Context, c Command) error {
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
		s.acquire(ctx, Command{ID: c.ID, Op: history.OpAcquire, Key: c.Key, TTL: c.TTL})
		if _, held := s.lease(c.Key); !held {
			if l.Backoff > 0 {
				time.Sleep(time.Duration(rng.Int64N(int64(l.Backoff) + 1)))
			}
			continue
		}
		cycles++
		if s.store != nil {
			s.write(ctx, Command{ID: c.ID, Op: history.OpWrite, Key: c.Key, Work: l.Draw(rng)})
		}
		s.release(ctx, Command{ID: c.ID, Op: history.OpRelease, Key: c.Key})
	}
	return nil
}

// Loop runs a generator loop on the worker and waits for it to finish.
func (c *Client) Loop(ctx context.Context, key string, ttl time.Duration, l Loop) error {
	return c.Do(ctx, Command{Op: OpLoop, Key: key, TTL: ttl, Loop: &l})
}

// StopLoop ends the worker's running loop after its current cycle and
// returns once it has (at once when none runs). Loop, waiting in another
// goroutine, then returns too.
func (c *Client) StopLoop(ctx context.Context) error {
	return c.Do(ctx, Command{Op: OpStopLoop})
}

// Hold stops the running loop's next write after its read, before its
// work, and returns once it has: the write's invocation is recorded and
// its client is inside its critical section. It fails when Resume came
// first or the loop ended before another write. Resume must follow.
func (c *Client) Hold(ctx context.Context) error {
	return c.Do(ctx, Command{Op: OpHold})
}

// Resume lets a held write go on, or takes back a hold not reached yet. It
// does not wait for the worker's reply: a paused worker reads the command
// once it is continued.
func (c *Client) Resume() {
	c.Send(Command{Op: OpResume})
}

// armHold makes the loop's next write wait (OpHold); the hold command id
// is done once it does. A hold armed before replaces the older one, which
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
		s.send(Reply{ID: id, Done: true, Error: why})
	}
}

// resumeHold lets a held write go on (OpResume), or fails a hold not
// reached yet.
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
// waits for OpResume.
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
	s.send(Reply{ID: id, Done: true})
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
