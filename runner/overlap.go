package runner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// window is an operation a story sends without waiting (async) and the
// other clients' operations it tells to begin while that one lasts: the
// steps, up to the client's wait, its next command or its kill, that the
// script reaches (by its sleeps) within the operation's work and the
// timed pauses of its client, less the margin, and before any step whose
// length a lock or a fault decides (a wait for another client, an acquire
// that waits). A step the script reaches only later is timed by something
// else: in etcd-pause's counterfactual, with the pause taken away,
// client 2's acquire 3.55s in comes after client 1's 200ms write, as it
// must.
type window struct {
	async   claim
	elapsed time.Duration // the sleeps the script has played since async
	// lasts is how long the operation is told to take: its work, and
	// each timed pause of its client the story strikes while it works
	// (fenced-pause's client 2 writes while client 1's 200ms write is
	// paused for 2s).
	lasts   time.Duration
	members []claim
	// untimed: a step since async took as long as a lock or a fault
	// made it (a wait for another client, an acquire that waits), so
	// the script no longer says where the steps after it fall.
	untimed bool
}

// overlaps follows a scripted story's windows as its steps are sent.
type overlaps struct {
	open   map[int]*window // by the async operation's client
	closed []*window
}

// sending notes step i, about to be sent at the record's time now, in a
// story whose margin is margin.
func (o *overlaps) sending(i int, st scenarios.Step, now int64, margin time.Duration) {
	if o.open == nil {
		o.open = map[int]*window{}
	}
	switch st.Do {
	case "sleep":
		for _, w := range o.open {
			w.elapsed += st.For.Duration
		}
		return
	case "wait":
		o.close(st.Client)
		o.untime()
		return
	case "kill":
		delete(o.open, st.Client) // its operation ends with the process
		return
	case "acquire", "release", "extend", "write":
	default:
		if f, ok := st.Fault(); ok {
			o.struck(f)
		}
		return
	}
	o.close(st.Client) // a new command waits for the client's last one
	c := claim{index: i, st: st, from: now}
	if st.Async {
		o.open[st.Client] = &window{async: c, lasts: st.Work.Duration}
		return
	}
	for _, w := range o.open {
		if !w.untimed && w.elapsed+margin < w.lasts {
			w.members = append(w.members, c)
		}
	}
	if st.Wait.Duration > 0 {
		o.untime()
	}
}

// struck notes a fault the story strikes: a pause of a window's client
// makes its operation last as long again (untimed when the pause lasts
// until a resume).
func (o *overlaps) struck(f history.FaultFields) {
	w, ok := o.open[f.Client]
	if !ok || !stopsClient(f) {
		return
	}
	if f.Lasts <= 0 {
		w.untimed = true
		return
	}
	w.lasts += time.Duration(f.Lasts)
}

// untime marks every open window untimed from here on.
func (o *overlaps) untime() {
	for _, w := range o.open {
		w.untimed = true
	}
}

func (o *overlaps) close(client int) {
	if w, ok := o.open[client]; ok {
		o.closed = append(o.closed, w)
		delete(o.open, client)
	}
}

// missed says which overlap the story told did not happen: a step told to
// be sent while another client's operation was in flight was sent after
// that operation had ended (a slow try-lock on a busy machine lets the
// other client finish first, and the story's race never runs). Empty when
// every window held. A member may well end after the operation: a release
// that answers a waiting acquire does.
func (o *overlaps) missed(sc *scenarios.Scenario, events []history.Event) string {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	ws := append(slices.Clone(o.closed), slices.Collect(maps.Values(o.open))...)
	slices.SortFunc(ws, func(a, b *window) int { return cmp.Compare(a.async.index, b.async.index) })
	for _, w := range ws {
		a, done := completion(events, w.async.st.Client, w.async.st.Do, w.async.from)
		sent, _ := invocation(events, w.async.st.Client, w.async.st.Do, w.async.from)
		if !done || a.Type == history.Info || time.Duration(a.Time-sent.Time) < w.async.st.Work.Duration {
			// It never ended, or not by an answer, or before its work
			// (refused at once: the lock's doing): nothing to time against.
			continue
		}
		for _, m := range w.members {
			e, sent := invocation(events, m.st.Client, m.st.Do, m.from)
			if !sent {
				continue
			}
			if e.Time > a.Time {
				return fmt.Sprintf("step %d (client %d's %s) was told to happen during step %d (client %d's %s), but began at t=%.3fs, after that ended at t=%.3fs",
					sc.StepNumber(m.index), m.st.Client, m.st.Do, sc.StepNumber(w.async.index), w.async.st.Client, w.async.st.Do,
					float64(e.Time)/1e9, float64(a.Time)/1e9)
			}
			if heldUp(events, m, a.Time) {
				// The lock held this call past the operation and answered
				// it otherwise than granted or done: the steps after it
				// are timed by the lock, not by the script.
				break
			}
		}
	}
	return ""
}

// heldUp says whether member m's call ended after end (the window's
// operation's end) without an ok: refused, or no answer at all (an
// error). pgbouncer's transaction pool, its one server connection held by
// another client's open transaction, keeps a try-lock queued for its
// query_wait_timeout and then closes the connection: the race the story
// told after that call cannot run, by the lock's doing. A call that was
// merely slow and then granted (a busy machine) is not held up: the miss
// stays the machine's.
func heldUp(events []history.Event, m claim, end int64) bool {
	c, done := completion(events, m.st.Client, m.st.Do, m.from)
	return done && c.Type != history.Ok && c.Time > end
}

// invocation finds the invocation of client's first op invoked at or
// after from; events are in recording order.
func invocation(events []history.Event, client int, op string, from int64) (history.Event, bool) {
	for _, e := range events {
		if e.Process == client && e.Op == op && e.Type == history.Invoke && e.Time >= from {
			return e, true
		}
	}
	return history.Event{}, false
}
