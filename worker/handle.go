package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
)

// Client is the harness's handle on one worker process.
type Client struct {
	// ID is the client's number in the story (1-based).
	ID    int
	proc  *env.Proc
	stdin io.WriteCloser
	rec   *history.Recorder

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan error
	started map[int64]chan struct{}
	dead    error
	// watch, when set, sees every event as it arrives (loop.go: Watch).
	watch func(history.Event)
	// stalls are the spans in which the worker reported it did not run,
	// on CLOCK_MONOTONIC: not on a record's clock, since the record is
	// swapped between trials and a report may arrive in the next one.
	stalls []protocol.Stall
	// hello is the hello line the client program printed (start.go).
	hello protocol.Hello
	// mono maps the program's CLOCK_MONOTONIC to the machine's
	// (StartOptions.Monotonic); nil: identity.
	mono func(int64) int64
}

// real maps an instant the program read to the machine's CLOCK_MONOTONIC.
func (c *Client) real(t int64) int64 {
	if c.mono == nil {
		return t
	}
	return c.mono(t)
}

// Stalls are the spans, on CLOCK_MONOTONIC (history.Monotonic), in which
// the worker reported it did not run: the machine too busy, or a pause on
// purpose.
func (c *Client) Stalls() []protocol.Stall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]protocol.Stall(nil), c.stalls...)
}

// Proc is the worker process, for faults that signal it.
func (c *Client) Proc() *env.Proc { return c.proc }

func (c *Client) read(stdout io.Reader) {
	dec := json.NewDecoder(bufio.NewReader(stdout))
	for {
		var r protocol.Reply
		if err := dec.Decode(&r); err != nil {
			var syn *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if errors.As(err, &syn) || errors.As(err, &typ) {
				// Not a protocol line: stdout is for replies only.
				c.fail(fmt.Errorf("client %d printed a line on stdout that is not a locksim worker protocol reply (%v): stdout is for protocol lines only, logs go to stderr", c.ID, err))
				c.proc.Kill()
				return
			}
			c.fail(fmt.Errorf("client %d exited", c.ID))
			return
		}
		if r.Stall != nil {
			st := protocol.Stall{From: c.real(r.Stall.From), To: c.real(r.Stall.To)}
			c.mu.Lock()
			c.stalls = append(c.stalls, st)
			c.mu.Unlock()
			continue
		}
		if r.Event != nil {
			rec, watch := c.sink()
			e := *r.Event
			e.Time = rec.Since(c.real(e.Time))
			if e.LeaseEnd != 0 {
				e.LeaseEnd = rec.Since(c.real(e.LeaseEnd))
			}
			e.Process = c.ID
			e = rec.Add(e)
			if watch != nil {
				watch(e)
			}
			c.markStarted(r.ID)
		}
		if r.Done {
			c.markStarted(r.ID)
			c.mu.Lock()
			ch := c.pending[r.ID]
			delete(c.pending, r.ID)
			c.mu.Unlock()
			if ch != nil {
				if r.Error != "" {
					ch <- errors.New(r.Error)
				} else {
					ch <- nil
				}
			}
		}
	}
}

// markStarted signals that the worker has begun command id (its first
// event arrived, or it finished).
func (c *Client) markStarted(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.started[id]; ok {
		close(ch)
		delete(c.started, id)
	}
}

// fail ends every pending command: the worker is gone.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = err
	for id, ch := range c.pending {
		ch <- err
		delete(c.pending, id)
	}
	for id, ch := range c.started {
		close(ch)
		delete(c.started, id)
	}
}

// Send starts a command and returns a channel that yields its result once.
func (c *Client) Send(cmd protocol.Command) <-chan error {
	_, done := c.Start(cmd)
	return done
}

// Start sends a command and returns two channels: started is closed once
// the worker has begun it (its first event arrived), done yields its
// result once.
func (c *Client) Start(cmd protocol.Command) (started <-chan struct{}, done <-chan error) {
	ch := make(chan error, 1)
	st := make(chan struct{})
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		ch <- c.dead
		close(st)
		return st, ch
	}
	c.nextID++
	cmd.ID = c.nextID
	c.pending[cmd.ID] = ch
	c.started[cmd.ID] = st
	c.mu.Unlock()
	b, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.mu.Lock()
		delete(c.pending, cmd.ID)
		c.mu.Unlock()
		ch <- fmt.Errorf("client %d: %w", c.ID, err)
		c.markStarted(cmd.ID)
	}
	return st, ch
}

// Do sends a command and waits for it to finish.
func (c *Client) Do(ctx context.Context, cmd protocol.Command) error {
	select {
	case err := <-c.Send(cmd):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill kills the worker at once (kill -9) and records the crash: every
// lease it held dies with it.
func (c *Client) Kill() {
	c.proc.Kill()
	rec, _ := c.sink()
	rec.Add(history.Event{Process: c.ID, Type: history.Ok, Op: history.OpCrash})
}

// Stopped says whether the client's process is stopped (SIGSTOP: state
// T in /proc), which no call of its lock can cause.
func (c *Client) Stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.proc.Pid()))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't')
}

// Stop closes the worker's stdin, lets it exit, and kills it if it does
// not within a second.
func (c *Client) Stop() {
	_ = c.stdin.Close()
	_ = c.proc.Signal(syscall.SIGCONT) // a paused worker cannot exit
	if c.proc.Wait(time.Second) != nil {
		c.proc.Kill()
	}
}
