package runner

// hang.go: a lock call that never returns is an outcome of the story,
// not a harness failure: the harness waits a stated bound for it, then
// kills the client, notes the call as hung and judges what the history
// shows (Judge: leaked, unless the lock was already unsafe).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksim/locksim/history"
)

// HangSlack is how long past its lease, its wait and its work a call may
// take before it counts as one that never returns: far longer than any
// fault of a story (the longest pause is 5s), far shorter than a test's
// patience.
const HangSlack = 30 * time.Second

// HangBound is how long the story waits for an answer to a call on a
// lease of ttl, before its own wait and work: the lease plus HangSlack.
func HangBound(ttl time.Duration) time.Duration { return ttl + HangSlack }

// inFlight is the operation last sent to a client and its bound.
type inFlight struct {
	op    string
	bound time.Duration
}

// hungCall is a call that never returned within its bound.
type hungCall struct {
	client int
	call   inFlight
}

func (h *hungCall) String() string {
	return fmt.Sprintf("client %d's %s never returned within %v", h.client, h.call.op, h.call.bound)
}

// errHung ends the story's steps at a call that never returned.
var errHung = errors.New("a call never returned")

// hang records that client's call never returned: a note in the history,
// and the client killed, so that nothing of it lingers.
func (r *run) hang(client int, call inFlight) error {
	h := &hungCall{client: client, call: call}
	if c := r.clients[client]; c != nil && c.Stopped() {
		// Stopped, it cannot answer: the harness's doing, not the lock's.
		return harness("%s, but its process is stopped (SIGSTOP): a harness failure, not a verdict", h)
	}
	if r.hung == nil {
		r.hung = h
	}
	r.rec.Add(history.Event{Process: client, Type: history.Note, Op: history.OpHung, Detail: h.String()})
	r.say("  %s: the client is killed and the story ends here", h)
	if c := r.clients[client]; c != nil {
		c.Kill()
	}
	return errHung
}

// endHung ends the story at step i, where a call was found hung (wait
// has taken it off pending): the other clients' calls are collected
// (each within its own bound), the claims left unsettled are moot, and
// the step that hung is where the lock departed from the story.
func (r *run) endHung(ctx context.Context, i int) error {
	for id := range r.pending {
		if err := r.wait(ctx, id); err != nil && !errors.Is(err, errHung) {
			return harness("client %d: %v", id, err)
		}
	}
	st := r.sc.Steps[i]
	if r.departed == nil {
		r.departed = &StoryError{File: r.sc.File, Line: st.Line, Step: r.sc.StepNumber(i), Claimed: "every call returns", Saw: r.hung.String()}
	}
	r.claims = nil
	return nil
}

// Hung finds the note of a call that never returned in a history.
func Hung(events []history.Event) (history.Event, bool) {
	for _, e := range events {
		if e.Type == history.Note && e.Op == history.OpHung {
			return e, true
		}
	}
	return history.Event{}, false
}
