package checker

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/history"
)

// Builders for hand-written histories. Times are milliseconds.

const ms = int64(time.Millisecond)

type mod func(inv, done *history.Event)

func fence(f int64) mod    { return func(_, d *history.Event) { d.Fence = f } }
func lease(end int64) mod  { return func(_, d *history.Event) { d.LeaseEnd = end * ms } }
func ttl(t int64) mod      { return func(i, _ *history.Event) { i.TTL = t * ms } }
func token(tok string) mod { return func(i, d *history.Event) { i.Token, d.Token = tok, tok } }

// gttl is the server-side expiry of a grant (the completion's TTL).
func gttl(t int64) mod { return func(_, d *history.Event) { d.TTL = t * ms } }

// reason is a completion's reason.
func reason(r string) mod { return func(_, d *history.Event) { d.Reason = r } }
func rw(read, wrote int64) mod {
	return func(_, d *history.Event) { d.Read, d.Wrote = history.Int64(read), history.Int64(wrote) }
}

// call is one operation: its invoke at inv and completion (typ) at done;
// typ "" leaves it pending.
func call(process int, opName, key string, inv, done int64, typ history.Type, mods ...mod) []history.Event {
	i := history.Event{Time: inv * ms, Process: process, Type: history.Invoke, Op: opName, Key: key}
	d := history.Event{Time: done * ms, Process: process, Type: typ, Op: opName, Key: key}
	for _, m := range mods {
		m(&i, &d)
	}
	if typ == "" {
		return []history.Event{i}
	}
	return []history.Event{i, d}
}

func acq(p int, key string, inv, done int64, typ history.Type, mods ...mod) []history.Event {
	return call(p, history.OpAcquire, key, inv, done, typ, mods...)
}

func rel(p int, key string, inv, done int64, typ history.Type, mods ...mod) []history.Event {
	return call(p, history.OpRelease, key, inv, done, typ, mods...)
}

func ext(p int, key string, inv, done int64, typ history.Type, mods ...mod) []history.Event {
	return call(p, history.OpExtend, key, inv, done, typ, mods...)
}

func write(p int, key string, inv, done int64, typ history.Type, mods ...mod) []history.Event {
	return call(p, history.OpWrite, key, inv, done, typ, mods...)
}

// renew is a watchdog's renewal note: ttl > 0 when it succeeded, else a
// failure for the reason given.
func renew(p int, key, tok string, t, ttl int64, why string) []history.Event {
	return []history.Event{{Time: t * ms, Process: p, Type: history.Note, Op: history.OpRenew, Key: key, Token: tok, TTL: ttl * ms, Reason: why}}
}

// renewals are renew notes of one lease every step ms in [from, to).
func renewals(p int, key, tok string, from, to, step, ttl int64) []history.Event {
	var out []history.Event
	for t := from; t < to; t += step {
		out = append(out, renew(p, key, tok, t, ttl, "")...)
	}
	return out
}

func crash(p int, t int64) []history.Event {
	return []history.Event{{Time: t * ms, Process: p, Type: history.Info, Op: history.OpCrash}}
}

func fault(typ history.Type, opName, target string, t int64, detail string) []history.Event {
	return []history.Event{{Time: t * ms, Type: typ, Op: opName, Target: target, Detail: detail}}
}

// hist sorts the events of the given operations by time and numbers them.
func hist(parts ...[]history.Event) []history.Event {
	var out []history.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	for i := range out {
		out[i].Seq = int64(i + 1) // recording order before sorting: ties keep it
	}
	history.Sort(out)
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	return out
}

const (
	ok   = history.Ok
	fail = history.Fail
	info = history.Info
)

type want struct {
	verdict                            Verdict
	mutex, damage, fencing, liveness   string
	overlaps, lost, stale, back, leaks int
	refused                            int
	summary                            string // a substring
}

type tc struct {
	name   string
	events []history.Event
	opts   Options
	want   want
}

func cases() []tc {
	return []tc{
		// Mutual exclusion.
		{"mutex/two overlapping holds", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 20, 30, ok),
			rel(1, "L", 50, 60, ok), rel(2, "L", 70, 80, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1,
			summary: "unsafe: clients 1 and 2 both held lock L between t=0.030s and t=0.050s (acquire #2 by client 1, acquire #4 by client 2)"}},
		{"mutex/lease expiry before next acquire", hist(
			acq(1, "L", 0, 10, ok, lease(100)), acq(2, "L", 150, 160, ok, lease(1000)),
			rel(1, "L", 200, 210, fail), rel(2, "L", 300, 310, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/lease ends after next acquire", hist(
			acq(1, "L", 0, 10, ok, lease(200)), acq(2, "L", 150, 160, ok, lease(1000)),
			rel(2, "L", 300, 310, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1,
			summary: "between t=0.160s and t=0.200s"}},
		{"mutex/release invoked before next acquire completes", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 40, 60, ok),
			rel(1, "L", 50, 70, ok), rel(2, "L", 80, 90, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/release invoked just after next acquire completes", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 40, 60, ok),
			rel(1, "L", 61, 70, ok), rel(2, "L", 80, 90, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1}},
		{"mutex/overlapping holds on different keys", hist(
			acq(1, "L", 0, 10, ok), acq(2, "M", 5, 15, ok),
			rel(1, "L", 50, 60, ok), rel(2, "M", 55, 65, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/client crash then another acquire", hist(
			acq(1, "L", 0, 10, ok), crash(1, 50),
			acq(2, "L", 60, 70, ok), rel(2, "L", 80, 90, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/failed acquires add no constraint", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 20, 30, fail), acq(3, "L", 25, 35, fail),
			rel(1, "L", 50, 60, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/extend moves the lease end", hist(
			acq(1, "L", 0, 10, ok, lease(100)), ext(1, "L", 80, 90, ok, lease(300)),
			acq(2, "L", 150, 160, ok, lease(1000)), rel(2, "L", 400, 410, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1,
			summary: "between t=0.160s and t=0.300s"}},
		{"mutex/extend after the lease ran out resumes the hold", hist(
			acq(1, "L", 0, 10, ok, lease(100)), acq(2, "L", 110, 120, ok, lease(1000)),
			ext(1, "L", 95, 130, ok, lease(300)), rel(2, "L", 400, 410, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1,
			summary: "between t=0.130s and t=0.300s"}},
		{"mutex/a renewal that found the lease gone ends the hold", hist(
			acq(1, "L", 0, 10, ok, token("a")), renew(1, "L", "a", 50, 0, history.ReasonNotHeld),
			acq(2, "L", 60, 70, ok, token("b")), rel(2, "L", 80, 90, ok, token("b")), rel(1, "L", 100, 110, fail, token("a")),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/a renewal the client refused by its own clock ends the hold", hist(
			acq(1, "L", 0, 10, ok, token("a")), renew(1, "L", "a", 50, 0, history.ReasonExpired),
			acq(2, "L", 60, 70, ok, token("b")), rel(2, "L", 80, 90, ok, token("b")), rel(1, "L", 100, 110, fail, token("a")),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"mutex/a renewal that failed otherwise ends nothing", hist(
			acq(1, "L", 0, 10, ok, token("a")), renew(1, "L", "a", 50, 0, history.ReasonTimeout),
			acq(2, "L", 60, 70, ok, token("b")), rel(2, "L", 80, 90, ok, token("b")), rel(1, "L", 100, 110, fail, token("a")),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1}},
		{"mutex/a lost renewal of another lease ends nothing", hist(
			acq(1, "L", 0, 10, ok, token("a")), renew(1, "L", "z", 50, 0, history.ReasonNotHeld),
			acq(2, "L", 60, 70, ok, token("b")), rel(2, "L", 80, 90, ok, token("b")), rel(1, "L", 100, 110, fail, token("a")),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1,
			summary: "both held lock L between t=0.070s and t=0.080s"}},
		{"mutex/a lost renewal does not end a lease with an end", hist(
			acq(1, "L", 0, 10, ok, token("a"), lease(200)), renew(1, "L", "a", 50, 0, history.ReasonNotHeld),
			acq(2, "L", 60, 70, ok, token("b")), rel(2, "L", 80, 90, ok, token("b")),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1}},
		{"mutex/release of another token does not end the hold", hist(
			acq(1, "L", 0, 10, ok, token("a")), rel(1, "L", 20, 30, ok, token("b")),
			acq(2, "L", 40, 50, ok, token("c")), rel(2, "L", 60, 70, ok, token("c")),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "skipped", fencing: "skipped", liveness: "ok", overlaps: 1}},

		// Info and pending operations.
		{"info/acquire with unknown outcome holds nothing", hist(
			acq(1, "L", 0, 10, info), acq(2, "L", 20, 30, ok), rel(2, "L", 40, 50, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"info/release with unknown outcome ends the hold at its invoke", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, info),
			acq(2, "L", 40, 50, ok), rel(2, "L", 60, 70, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"info/pending release at the end of the history", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 0, ""),
			acq(2, "L", 40, 50, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"info/write that may have happened explains a later read", hist(
			write(1, "L", 0, 10, info, rw(0, 1)), write(2, "L", 20, 30, ok, rw(1, 2)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},
		{"info/write that may not have happened", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, info, rw(1, 2)), write(3, "L", 40, 50, ok, rw(1, 2)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},
		{"info/acquire may still hold the lock: no leak", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, ok),
			acq(3, "L", 40, 50, info), acq(2, "L", 60, 70, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},

		// Damage.
		{"damage/sequential writes", hist(
			acq(1, "L", 0, 10, ok), write(1, "L", 20, 30, ok, rw(5, 6)), rel(1, "L", 40, 50, ok),
			acq(2, "L", 60, 70, ok), write(2, "L", 80, 90, ok, rw(6, 7)), rel(2, "L", 100, 110, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "ok", fencing: "skipped", liveness: "ok",
			summary: "safe: 2 holds with no overlap, 2 writes accepted"}},
		{"damage/lost update after the lease ran out", hist(
			acq(1, "L", 0, 10, ok, lease(100)), write(1, "L", 20, 150, ok, rw(0, 1)),
			acq(2, "L", 110, 120, ok, lease(1000)), write(2, "L", 130, 140, ok, rw(0, 1)), rel(2, "L", 160, 170, ok),
			rel(1, "L", 180, 190, fail),
		), Options{}, want{verdict: Unsafe, mutex: "ok", damage: "illegal", fencing: "skipped", liveness: "ok", lost: 1,
			summary: "unsafe: lost update on L: client 2's write #"}},
		{"damage/lost update with overlapping holds", hist(
			acq(1, "L", 0, 10, ok), write(1, "L", 20, 150, ok, rw(0, 1)),
			acq(2, "L", 110, 120, ok), write(2, "L", 130, 140, ok, rw(0, 1)), rel(2, "L", 160, 170, ok),
			rel(1, "L", 180, 190, ok),
		), Options{}, want{verdict: Unsafe, mutex: "illegal", damage: "illegal", fencing: "skipped", liveness: "ok", overlaps: 1, lost: 1}},
		{"damage/stale write accepted", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, ok, rw(1, 2)), write(3, "L", 40, 50, ok, rw(7, 8)),
		), Options{}, want{verdict: Unsafe, mutex: "skipped", damage: "illegal", fencing: "skipped", liveness: "skipped", stale: 1,
			summary: "stale write #6 on L"}},
		{"damage/read of a value written later", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, ok, rw(2, 3)), write(3, "L", 40, 50, ok, rw(1, 2)),
		), Options{}, want{verdict: Unsafe, mutex: "skipped", damage: "illegal", fencing: "skipped", liveness: "skipped", stale: 1}},
		{"damage/cycle no scan sees", hist(
			write(1, "L", 0, 100, ok, rw(0, 1)), write(2, "L", 0, 100, ok, rw(2, 3)), write(3, "L", 0, 100, ok, rw(3, 2)),
		), Options{}, want{verdict: Unsafe, mutex: "skipped", damage: "illegal", fencing: "skipped", liveness: "skipped", stale: 1}},
		{"damage/a write whose read failed has no values", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, fail, reason(history.ReasonRead)), write(3, "L", 40, 50, ok, rw(1, 2)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},
		{"damage/a write of unknown value may have stored anything", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, info), write(3, "L", 40, 50, ok, rw(0, 1)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},
		{"damage/a pending write of unknown value may have stored anything", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 0, ""), crash(2, 25), write(3, "L", 40, 50, ok, rw(0, 1)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},
		{"damage/a write of unknown value after a lost update", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(3, "L", 20, 30, ok, rw(0, 1)), write(2, "L", 40, 50, info),
		), Options{}, want{verdict: Unsafe, mutex: "skipped", damage: "illegal", fencing: "skipped", liveness: "skipped", lost: 1}},
		{"damage/refused writes change nothing", hist(
			write(1, "L", 0, 10, ok, rw(0, 1)), write(2, "L", 20, 30, fail, rw(0, 1)), write(3, "L", 40, 50, ok, rw(1, 2)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "skipped", liveness: "skipped"}},

		// Fencing.
		{"fencing/stale write refused while the lock was violated", hist(
			acq(1, "L", 0, 10, ok, fence(1)), write(1, "L", 20, 90, fail, rw(0, 1), fence(1), reason(history.ReasonFence)),
			acq(2, "L", 50, 60, ok, fence(2)), write(2, "L", 70, 80, ok, rw(0, 1), fence(2)),
			rel(2, "L", 100, 110, ok), rel(1, "L", 120, 130, fail),
		), Options{}, want{verdict: Safe, mutex: "illegal", damage: "ok", fencing: "ok", liveness: "ok", overlaps: 1, refused: 1,
			summary: "safe, but the lock was violated: clients 1 and 2 both held lock L"}},
		{"fencing/token goes backwards", hist(
			acq(1, "L", 0, 10, ok, fence(5)), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 50, ok, fence(3)), rel(2, "L", 60, 70, ok),
		), Options{}, want{verdict: Unsafe, mutex: "ok", damage: "skipped", fencing: "illegal", liveness: "ok", back: 1,
			summary: "unsafe: the fencing token went backwards on L: an acquire was granted fence 3 (#6 by client 2, t=0.050s) after fence 5"}},
		{"fencing/token repeats", hist(
			acq(1, "L", 0, 10, ok, fence(5)), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 50, ok, fence(5)), rel(2, "L", 60, 70, ok),
		), Options{}, want{verdict: Unsafe, mutex: "ok", damage: "skipped", fencing: "illegal", liveness: "ok", back: 1}},
		{"fencing/accepted write below an accepted write", hist(
			write(1, "L", 0, 10, ok, rw(0, 1), fence(5)), write(2, "L", 20, 30, ok, rw(1, 2), fence(3)),
		), Options{}, want{verdict: Unsafe, mutex: "skipped", damage: "ok", fencing: "illegal", liveness: "skipped", back: 1}},
		{"fencing/tokens rise", hist(
			acq(1, "L", 0, 10, ok, fence(1)), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 50, ok, fence(2)), rel(2, "L", 60, 70, ok),
			acq(3, "M", 0, 10, ok, fence(1)), rel(3, "M", 20, 30, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "ok", liveness: "ok"}},
		{"fencing/concurrent grants completed out of order", hist(
			acq(2, "L", 0, 30, ok, fence(3), lease(1000)), acq(1, "L", 5, 30, ok, fence(2), lease(30)), rel(2, "L", 40, 50, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "ok", liveness: "ok"}},
		{"fencing/concurrent writes completed out of order", hist(
			write(1, "L", 0, 20, ok, rw(1, 2), fence(3)), write(2, "L", 10, 25, ok, rw(0, 1), fence(2)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "ok", liveness: "skipped"}},
		{"fencing/lower grant invoked after a higher one completed", hist(
			acq(2, "L", 0, 10, ok, fence(3), lease(20)), acq(1, "L", 5, 40, ok, fence(4), lease(50)),
			acq(3, "L", 60, 70, ok, fence(2), lease(100)),
		), Options{}, want{verdict: Unsafe, mutex: "ok", damage: "skipped", fencing: "illegal", liveness: "ok", back: 1,
			summary: "an acquire was granted fence 2 (#6 by client 3, t=0.070s) after fence 4 (#4 by client 1, t=0.040s)"}},
		{"fencing/a read failure is no fence refusal", hist(
			write(1, "L", 0, 10, ok, rw(0, 1), fence(1)), write(2, "L", 20, 30, fail, fence(1), reason(history.ReasonRead)),
			write(3, "L", 40, 50, fail, rw(0, 1), fence(1), reason(history.ReasonFence)),
		), Options{}, want{verdict: Safe, mutex: "skipped", damage: "ok", fencing: "ok", liveness: "skipped", refused: 1}},

		// Liveness.
		{"liveness/leaked after release", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 50, fail), acq(3, "L", 60, 70, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1,
			summary: "leaked: lock L stayed held after client 1 released at t=0.030s: client 2's acquire #6 failed at t=0.050s (2 failed acquires)"}},
		{"liveness/refusals of contending acquirers are no leak", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 55, fail), acq(3, "L", 45, 60, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/an uncontended refusal after contention is a leak", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, ok),
			acq(2, "L", 40, 55, fail), acq(3, "L", 45, 60, fail), acq(2, "L", 70, 80, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1}},
		{"liveness/holder still alive", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 40, 50, fail), rel(1, "L", 60, 70, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/refused while the release is in flight", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 45, ok), acq(2, "L", 40, 50, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/failed release keeps the lock", hist(
			acq(1, "L", 0, 10, ok), rel(1, "L", 20, 30, fail), acq(2, "L", 40, 50, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/leaked after crash", hist(
			acq(1, "L", 0, 10, ok), crash(1, 20), acq(2, "L", 1100, 1110, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1,
			summary: "after client 1 crashed at t=0.020s"}},
		{"liveness/refused before the server noticed the crash", hist(
			acq(1, "L", 0, 10, ok), crash(1, 20), acq(2, "L", 40, 50, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/a crash leaves a lease with expiry in place", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), lease(900)), crash(1, 20), acq(2, "L", 1500, 1510, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/leaked past the TTL", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), lease(900)), crash(1, 20), acq(2, "L", 2500, 2510, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1,
			summary: "after client 1 expired at t=1.010s"}},
		{"liveness/within the TTL and its slack", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), lease(900)), acq(2, "L", 2000, 2005, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/the TTL asked for is not the server's", hist(
			acq(1, "L", 0, 10, ok, ttl(1000)), acq(2, "L", 5000, 5010, fail), rel(1, "L", 6000, 6010, ok),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/extend keeps the lease", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), lease(900)), ext(1, "L", 800, 810, ok, ttl(1000), lease(1700)),
			acq(2, "L", 2500, 2510, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/renewals keep the lease", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), token("a")), renewals(1, "L", "a", 340, 4000, 330, 1000),
			acq(2, "L", 2500, 2510, fail), acq(2, "L", 3500, 3510, fail), rel(1, "L", 4000, 4010, ok, token("a")),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
		{"liveness/leaked after renewals stopped", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), token("a")), renewals(1, "L", "a", 340, 1400, 330, 1000), crash(1, 1400),
			acq(2, "L", 2500, 2510, fail), acq(2, "L", 3500, 3510, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1,
			summary: "after client 1 expired at t=2.330s: client 2's acquire #"}},
		{"liveness/renewals of another lease keep nothing", hist(
			acq(1, "L", 0, 10, ok, ttl(1000), gttl(1000), token("a")), renewals(1, "L", "b", 340, 4000, 330, 1000),
			acq(2, "L", 2500, 2510, fail),
		), Options{}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal", leaks: 1}},
		{"liveness/no grant for longer than MaxGap", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 100, 110, fail), acq(2, "L", 500, 510, fail), acq(2, "L", 900, 910, fail),
		), Options{MaxGap: 300 * time.Millisecond}, want{verdict: Leaked, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "illegal",
			summary: "leaked: no acquire of L was granted between t=0.010s and t=0.910s (2 attempts refused"}},
		{"liveness/MaxGap off", hist(
			acq(1, "L", 0, 10, ok), acq(2, "L", 100, 110, fail), acq(2, "L", 500, 510, fail), acq(2, "L", 900, 910, fail),
		), Options{}, want{verdict: Safe, mutex: "ok", damage: "skipped", fencing: "skipped", liveness: "ok"}},
	}
}

// mustCheck checks a history that must be valid.
func mustCheck(t testing.TB, events []history.Event, o Options) Result {
	t.Helper()
	r, err := Check(events, o)
	if err != nil {
		var b bytes.Buffer
		_ = history.Write(&b, events)
		t.Fatalf("%v; history:\n%s", err, b.String())
	}
	return r
}

func TestCheck(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			r := mustCheck(t, c.events, c.opts)
			w := c.want
			got := want{
				verdict: r.Verdict, mutex: r.Mutex.Outcome, damage: r.Damage.Outcome, fencing: r.Fencing.Outcome, liveness: r.Liveness.Outcome,
				overlaps: r.Mutex.OverlapCount, lost: r.Damage.LostUpdateCount, stale: r.Damage.StaleWriteCount,
				back: r.Fencing.BackwardsCount, leaks: r.Liveness.LeakCount, refused: r.Fencing.Refused, summary: w.summary,
			}
			if got != w {
				b, _ := json.MarshalIndent(r, "", "  ")
				t.Errorf("got  %+v\nwant %+v\nresult: %s", got, w, b)
			}
			if w.summary != "" && !strings.Contains(r.Summary, w.summary) {
				t.Errorf("summary %q\ndoes not contain %q", r.Summary, w.summary)
			}
			if strings.Count(r.Summary, ". ") > 0 {
				t.Errorf("summary is more than one sentence: %q", r.Summary)
			}
			wantViolations := w.overlaps + w.lost + w.stale + w.back + w.leaks + len(r.Liveness.Stalls)
			if r.Violations != wantViolations {
				t.Errorf("violations = %d, want %d", r.Violations, wantViolations)
			}
		})
	}
}

// The porcupine check and the sweep over hold intervals must agree: a
// history is illegal exactly when two clients' holds of one key overlap.
func TestMutexPorcupineAgreesWithSweep(t *testing.T) {
	illegal := 0
	check := func(t *testing.T, events []history.Event) {
		t.Helper()
		p := parse(events)
		hs := holds(p)
		n, _ := overlaps(hs, p.last)
		ops := mutexOperations(p, hs)
		res := porcupine.CheckOperationsTimeout(mutexModel, ops, 10*time.Second)
		if res == porcupine.Illegal {
			illegal++
		}
		if (res == porcupine.Illegal) != (n > 0) || res == porcupine.Unknown {
			var b bytes.Buffer
			_ = history.Write(&b, events)
			t.Fatalf("porcupine says %s, the sweep found %d overlaps; history:\n%s", res, n, b.String())
		}
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) { check(t, c.events) })
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		illegal = 0
		for range 3000 {
			check(t, randomHistory(rng, 3, 12))
		}
		t.Logf("%d of 3000 random histories illegal", illegal)
		if illegal < 300 || illegal > 2700 {
			t.Errorf("%d of 3000 random histories illegal: not varied enough", illegal)
		}
	})
}

// randomHistory has clients taking turns at two keys (clients 1..n on L,
// n+1..2n on M): mostly one after another, sometimes overlapping, with
// leases, extends, crashes, refusals and unknown outcomes.
func randomHistory(rng *rand.Rand, clients, cycles int) []history.Event {
	var parts [][]history.Event
	r := func(a, b int) int64 { return int64(a + rng.Intn(b-a+1)) }
	for ki, k := range []string{"L", "M"} {
		busy := map[int]int64{} // client -> end of its last operation
		free := func(from int64) int {
			for range 10 {
				c := ki*clients + 1 + rng.Intn(clients)
				if busy[c] < from {
					return c
				}
			}
			return 0
		}
		t := r(0, 20)
		for range cycles {
			c := free(t)
			if c == 0 {
				t += 50
				continue
			}
			inv, done := t, t+r(1, 10)
			if o := free(inv); o != 0 && o != c && rng.Intn(5) == 0 {
				parts = append(parts, acq(o, k, inv+r(0, 3), done+r(0, 3), fail))
				busy[o] = done + 3
			}
			if rng.Intn(10) == 0 {
				parts = append(parts, acq(c, k, inv, done, info))
				busy[c] = done
				t = done + r(0, 10)
				continue
			}
			var mods []mod
			le := int64(0)
			if rng.Intn(2) == 0 {
				le = done + r(5, 60)
				mods = append(mods, lease(le))
			}
			parts = append(parts, acq(c, k, inv, done, ok, mods...))
			end := done + r(1, 40)
			if le != 0 && rng.Intn(4) == 0 {
				ei, ed := done+r(1, 20), 0
				ed = int(ei) + int(r(1, 30))
				parts = append(parts, ext(c, k, ei, int64(ed), ok, lease(int64(ed)+r(0, 60))))
				end = max(end, int64(ed)+1)
			}
			relDone := end + r(1, 10)
			switch rng.Intn(10) {
			case 0:
				parts = append(parts, crash(c, end))
			case 1:
				parts = append(parts, rel(c, k, end, relDone, info))
			default:
				parts = append(parts, rel(c, k, end, relDone, ok))
			}
			busy[c] = relDone
			switch x := rng.Intn(40); {
			case x == 0: // likely overlapping
				t = done + r(0, 20)
			case x < 4 && le != 0: // around the lease's end
				t = le + r(-5, 10)
			default: // around the release's invocation
				t = end + r(-4, 10)
			}
		}
	}
	return hist(parts...)
}

func TestVisualize(t *testing.T) {
	events := hist(
		acq(1, "L", 0, 10, ok, lease(100)), write(1, "L", 20, 150, ok, rw(0, 1)),
		fault(history.Fault, "pause", "client 1", 30, "SIGSTOP"), fault(history.Heal, "pause", "client 1", 140, ""),
		fault(history.Fault, "clock-jump", "", 35, "+60s"),
		[]history.Event{{Time: 5 * ms, Type: history.Note, Op: "step", Detail: "client 1 takes the lock"}},
		acq(2, "L", 110, 120, ok, lease(1000)), write(2, "L", 130, 140, ok, rw(0, 1)), rel(2, "L", 160, 170, ok),
		crash(1, 200),
	)
	var b bytes.Buffer
	if err := Visualize(events, Options{}, &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, s := range []string{"client 1 acquire L", "lease on L runs out", "pause SIGSTOP", "client 1 takes the lock", "clock-jump +60s", "held by client 2", "crash"} {
		if !strings.Contains(html, s) {
			t.Errorf("visualization lacks %q", s)
		}
	}
	an := annotations(parse(events))
	var spans, points int
	for _, a := range an {
		if a.End > a.Start {
			spans++
		} else {
			points++
		}
	}
	if spans != 2 || points != 2 {
		t.Errorf("annotations: %d spans and %d points, want 2 and 2: %+v", spans, points, an)
	}
}

// A check hands the reports what it derived: its holds, and porcupine's
// linearization, drawn as Visualize draws it from the history alone.
func TestDerived(t *testing.T) {
	events := hist(
		acq(1, "L", 0, 10, ok, lease(100), token("a"), fence(1)), rel(1, "L", 50, 60, ok, token("a")),
		acq(2, "L", 70, 80, ok, lease(150), token("b"), fence(2)),
		acq(3, "L", 90, 100, ok, token("c")), crash(3, 300),
		acq(1, "L", 400, 410, ok, token("d")),
	)
	r := mustCheck(t, events, Options{})
	if r.Derived == nil {
		t.Fatal("no Derived")
	}
	type hold struct {
		client   int
		token    string
		from, to int64
		open     bool
		end      string
	}
	var got []hold
	for i, h := range r.Derived.Holds() {
		if h.ID != i+1 || h.From != h.Grant.Time || h.Key != "L" {
			t.Errorf("hold %d: %+v", i, h)
		}
		got = append(got, hold{h.Client, h.Token, h.From, h.To, h.Open, h.End})
	}
	want := []hold{
		{1, "a", 10 * ms, 50 * ms, false, HoldReleased},
		{2, "b", 80 * ms, 150 * ms, false, HoldExpired},
		{3, "c", 100 * ms, 300 * ms, false, HoldCrashed},
		{1, "d", 410 * ms, 0, true, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("holds:\n got %+v\nwant %+v", got, want)
	}
	if hs := Holds(events); !reflect.DeepEqual(hs, r.Derived.Holds()) {
		t.Errorf("Holds(events) = %+v, the check's %+v", hs, r.Derived.Holds())
	}
	var fromCheck, alone bytes.Buffer
	if err := r.Derived.Visualize(&fromCheck); err != nil {
		t.Fatal(err)
	}
	if err := Visualize(events, Options{}, &alone); err != nil {
		t.Fatal(err)
	}
	if fromCheck.String() != alone.String() {
		t.Error("the check's visualization differs from Visualize's")
	}
	if b, _ := json.Marshal(r); bytes.Contains(b, []byte("erived")) {
		t.Errorf("result.json has what the check derived: %s", b)
	}
}

func TestResultJSON(t *testing.T) {
	r := mustCheck(t, cases()[0].events, Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"verdict":"unsafe"`, `"mutex":{"outcome":"illegal"`, `"acquire_a":{"seq":2`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("JSON lacks %s: %s", s, b)
		}
	}
}

// benchHistory is a generated history of n operations: 4 clients taking
// turns at acquire, write, release on one key, while another client's
// acquire fails alongside each hold.
func benchHistory(n int) []history.Event {
	var ev []history.Event
	var seq, t int64
	add := func(p int, typ history.Type, opName string, mods ...func(*history.Event)) {
		seq++
		e := history.Event{Seq: seq, Time: t, Process: p, Type: typ, Op: opName, Key: "L"}
		for _, m := range mods {
			m(&e)
		}
		ev = append(ev, e)
	}
	counter := int64(0)
	ops := 0
	for i := 0; ops < n; i++ {
		c := i%4 + 1
		other := (i+1)%4 + 1
		tok := func(e *history.Event) { e.Token = "t" + string(rune('a'+i%26)) }
		add(c, history.Invoke, history.OpAcquire, tok)
		t += 30_000
		add(other, history.Invoke, history.OpAcquire)
		t += 10_000
		f := int64(i + 1)
		add(c, history.Ok, history.OpAcquire, tok, func(e *history.Event) { e.Fence = f; e.LeaseEnd = t + 1e9 })
		t += 5_000
		add(other, history.Fail, history.OpAcquire)
		t += 5_000
		add(c, history.Invoke, history.OpWrite, func(e *history.Event) { e.Fence = f })
		t += 40_000
		r, w := counter, counter+1
		counter++
		add(c, history.Ok, history.OpWrite, func(e *history.Event) { e.Fence = f; e.Read, e.Wrote = &r, &w })
		t += 5_000
		add(c, history.Invoke, history.OpRelease, tok)
		t += 40_000
		add(c, history.Ok, history.OpRelease, tok)
		t += 5_000
		ops += 4
	}
	return ev
}

func TestBenchHistoryIsSafe(t *testing.T) {
	r := mustCheck(t, benchHistory(10_000), Options{})
	if r.Verdict != Safe || r.Mutex.Outcome != OutcomeOk || r.Damage.Outcome != OutcomeOk || r.Fencing.Outcome != OutcomeOk || r.Liveness.Outcome != OutcomeOk {
		t.Fatalf("%s: %+v", r.Summary, r)
	}
}

func BenchmarkCheck100k(b *testing.B) {
	events := benchHistory(100_000)
	b.ResetTimer()
	for b.Loop() {
		r := mustCheck(b, events, Options{})
		if r.Verdict != Safe {
			b.Fatal(r.Summary)
		}
	}
}

// Cutting each key's operations into segments must not change porcupine's
// answer: compare with the key-only partition, cutting as often as possible.
func TestSegmentsAreExact(t *testing.T) {
	defer func(n int) { minSegment = n }(minSegment)
	minSegment = 1
	keyOnlyDamage := damageModel
	keyOnlyDamage.Partition = func(ops []porcupine.Operation) [][]porcupine.Operation {
		return partitionByKey(ops, func(o porcupine.Operation) string { return o.Input.(writeInput).key })
	}
	rng := rand.New(rand.NewSource(2))
	var illegalMutex, illegalDamage int
	for i := range 3000 {
		events := randomHistory(rng, 3, 12)
		p := parse(events)
		ops := mutexOperations(p, holds(p))
		a := porcupine.CheckOperationsTimeout(mutexModel, ops, 10*time.Second)
		b := porcupine.CheckOperationsTimeout(segmentedMutexModel, ops, 10*time.Second)
		if a != b {
			t.Fatalf("history %d: mutex by key %s, by segment %s", i, a, b)
		}
		if a == porcupine.Illegal {
			illegalMutex++
		}

		events = randomWrites(rng, 3, 10)
		p = parse(events)
		var wops []porcupine.Operation
		for j, w := range p.ops {
			if w.status() == history.Fail {
				continue
			}
			in := writeInput{key: w.key(), client: w.inv.Process, unknown: w.status() == history.Info, completion: j}
			in.read, in.hasRead = w.read()
			in.wrote, in.hasWrote = w.wrote()
			wops = append(wops, porcupine.Operation{ClientId: w.inv.Process - 1, Input: in, Call: w.inv.Time, Return: w.returnTime(p.horizon)})
		}
		a = porcupine.CheckOperationsTimeout(keyOnlyDamage, wops, 10*time.Second)
		b = porcupine.CheckOperationsTimeout(damageModel, wops, 10*time.Second)
		if a != b {
			var buf bytes.Buffer
			_ = history.Write(&buf, events)
			t.Fatalf("history %d: damage by key %s, by segment %s:\n%s", i, a, b, buf.String())
		}
		if a == porcupine.Illegal {
			illegalDamage++
		}
		// The scans name a culprit exactly when porcupine finds damage.
		d := checkDamage(p, Options{})
		if (d.Outcome == OutcomeIllegal) != (d.LostUpdateCount+d.StaleWriteCount > 0) || d.Outcome != outcome(a) {
			var buf bytes.Buffer
			_ = history.Write(&buf, events)
			t.Fatalf("history %d: porcupine %s, damage %+v:\n%s", i, a, d, buf.String())
		}
	}
	t.Logf("illegal: %d mutex, %d damage of 3000", illegalMutex, illegalDamage)
	if illegalMutex == 0 || illegalDamage == 0 || illegalMutex == 3000 || illegalDamage == 3000 {
		t.Errorf("random histories not varied: %d illegal mutex, %d illegal damage", illegalMutex, illegalDamage)
	}
}

// randomWrites has clients writing a shared counter, mostly reading the
// value last written, sometimes an older one, some refused or unknown.
func randomWrites(rng *rand.Rand, clients, writes int) []history.Event {
	var parts [][]history.Event
	var values []int64
	cur := int64(0)
	t := int64(0)
	for range clients * writes {
		c := 1 + rng.Intn(clients)
		t += 3 + int64(rng.Intn(10))
		inv := t
		done := inv + 1 + int64(rng.Intn(6))
		read := cur
		if rng.Intn(40) == 0 && len(values) > 0 {
			read = values[rng.Intn(len(values))]
		}
		wrote := read + 1 + int64(rng.Intn(2))
		typ := ok
		switch rng.Intn(10) {
		case 0:
			typ = fail
		case 1:
			typ = info
		}
		if typ != fail {
			values = append(values, cur)
			cur = wrote
		}
		parts = append(parts, write(c, "L", inv, done, typ, rw(read, wrote)))
	}
	// One client's history must be sequential: drop overlapping ones.
	return sequential(hist(parts...))
}

// sequential drops the operations that a process invoked while its
// previous one was in flight.
func sequential(events []history.Event) []history.Event {
	busy := map[int]bool{}
	skip := map[int]bool{}
	var out []history.Event
	for _, e := range events {
		if e.Type == history.Invoke {
			if busy[e.Process] {
				skip[e.Process] = true
				continue
			}
			busy[e.Process] = true
		} else if e.Completes() {
			if skip[e.Process] {
				skip[e.Process] = false
				continue
			}
			busy[e.Process] = false
		}
		out = append(out, e)
	}
	return out
}
