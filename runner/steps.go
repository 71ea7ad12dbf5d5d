// steps.go carries out a scripted story step by step: each step's command
// sent to its client, its operation awaited or left in flight, its outcome
// narrated as it arrives, and a pause anchored in a write awaited.

package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
)

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
