package checker

import (
	"slices"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
)

// TestNotices measures the time to notice and the overlap on hand-built
// histories: client 1 holds L, is paused (nothing of it in the history
// meanwhile), and client 2 is granted L at 2000ms, releasing at 2100ms.
// Client 1 then learns it lost L in each of the ways a holder can, or
// never does; and the lock is not given away at all.
func TestNotices(t *testing.T) {
	c1 := func(parts ...[]history.Event) []history.Event {
		return hist(slices.Concat([][]history.Event{acq(1, "L", 0, 10, ok, token("a"), lease(1010), gttl(1000))}, parts)...)
	}
	c2 := [][]history.Event{
		acq(2, "L", 1990, 2000, ok, token("b"), lease(3000)),
		write(2, "L", 2010, 2020, ok, rw(0, 1)),
		rel(2, "L", 2100, 2105, ok, token("b")),
	}
	with := func(parts ...[]history.Event) []history.Event { return c1(slices.Concat(c2, parts)...) }
	for _, c := range []struct {
		name    string
		events  []history.Event
		given   bool
		learned bool
		by      string
		after   time.Duration
		overlap time.Duration
	}{
		{
			name: "learned by a failed check", given: true, learned: true, by: LearnedByCheck,
			events: with(write(1, "L", 20, 2500, fail, reason(history.ReasonExpired)), rel(1, "L", 2600, 2601, fail, token("a"), reason(history.ReasonNotHeld))),
			after:  500 * time.Millisecond, overlap: 100 * time.Millisecond,
		},
		{
			name: "learned by a failed renewal", given: true, learned: true, by: LearnedByRenewal,
			events: with(renew(1, "L", "a", 2050, 0, history.ReasonNotHeld), write(1, "L", 20, 2060, ok, rw(0, 1)), rel(1, "L", 2070, 2071, fail, token("a"), reason(history.ReasonNoLease))),
			after:  50 * time.Millisecond, overlap: 50 * time.Millisecond,
		},
		{
			// A renewal that timed out tells nothing: the release does.
			name: "learned by an error on its next command", given: true, learned: true, by: LearnedByRefusal,
			events: with(renew(1, "L", "a", 1900, 0, history.ReasonTimeout), write(1, "L", 20, 2400, ok, rw(0, 1)), rel(1, "L", 3000, 3002, fail, token("a"), reason(history.ReasonNotHeld))),
			after:  1002 * time.Millisecond, overlap: 100 * time.Millisecond,
		},
		{
			name: "learned by a fenced write", given: true, learned: true, by: LearnedByRefusal,
			events: with(write(1, "L", 20, 2400, fail, reason(history.ReasonFence))),
			after:  400 * time.Millisecond, overlap: 100 * time.Millisecond,
		},
		{
			name: "learned before it was given away", given: true, learned: true, by: LearnedByCheck,
			events: with(write(1, "L", 20, 1500, fail, reason(history.ReasonExpired))),
			after:  -500 * time.Millisecond, overlap: 0,
		},
		{
			// Its write goes out, accepted, and nothing ever tells it.
			name: "never", given: true,
			events:  with(write(1, "L", 20, 2400, ok, rw(0, 1)), fault(history.Heal, "pause", "client 1", 4000, "")),
			overlap: 100 * time.Millisecond,
		},
		{
			// Client 1 released before client 2 was granted the lock.
			name: "not given away",
			events: c1(rel(1, "L", 500, 501, ok, token("a")), acq(2, "L", 1990, 2000, ok, token("b")), rel(2, "L", 2100, 2105, ok, token("b")),
				write(1, "L", 600, 650, fail, reason(history.ReasonNoLease))),
		},
		{
			// Client 1 crashed: its lock is not taken from a holder.
			name:   "given after a crash",
			events: c1(crash(1, 1000), acq(2, "L", 1990, 2000, ok, token("b"))),
		},
		{
			// Another key is not a give-away; two holders of one key
			// that believe at once overlap however their leases read.
			name:   "another key",
			events: c1(acq(2, "M", 1990, 2000, ok, token("b")), rel(2, "M", 2100, 2105, ok, token("b"))),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := history.Validate(c.events); err != nil {
				t.Fatalf("the test's history is invalid: %v", err)
			}
			n := noticesOf(c.events)
			if n.GivenAway != c.given || n.Learned != c.learned || n.By != c.by || n.After != c.after || n.Overlap != c.overlap {
				t.Fatalf("got given_away %v learned %v by %q after %v overlap %v; want %v %v %q %v %v",
					n.GivenAway, n.Learned, n.By, n.After, n.Overlap, c.given, c.learned, c.by, c.after, c.overlap)
			}
			if c.given && (n.Holder != 1 || n.Taker != 2 || n.Key != "L" || n.GivenAt != 2000*ms) {
				t.Errorf("given away %s from client %d to client %d at %d; want L from 1 to 2 at 2000ms", n.Key, n.Holder, n.Taker, n.GivenAt)
			}
			if !c.given && (n.Holder != 0 || n.After != 0 || n.Learned) {
				t.Errorf("nothing given away, yet %+v", n)
			}
		})
	}
}

// TestOverlapCountsEachInstantOnce: three clients believing at once add
// their common time once, and a belief that ends as another begins does
// not overlap it.
func TestOverlapCountsEachInstantOnce(t *testing.T) {
	events := hist(
		acq(1, "L", 0, 0, ok, token("a")),
		acq(2, "L", 100, 100, ok, token("b")),
		acq(3, "L", 150, 150, ok, token("c")),
		rel(3, "L", 200, 201, ok, token("c")),
		rel(2, "L", 300, 301, ok, token("b")),
		rel(1, "L", 400, 401, ok, token("a")),
		acq(2, "L", 400, 400, ok, token("d")),
		rel(2, "L", 500, 501, ok, token("d")),
	)
	n := noticesOf(events)
	if n.Overlap != 200*time.Millisecond || n.GiveAways != 2 {
		t.Fatalf("overlap %v in %d give-aways; want 200ms (100ms to 300ms, counted once) in 2", n.Overlap, n.GiveAways)
	}
}

func BenchmarkNotices100k(b *testing.B) {
	p := parse(benchHistory(100_000))
	for b.Loop() {
		notices(p)
	}
}

// noticesOf measures a history's time to notice and overlap (Notice).
func noticesOf(events []history.Event) Notice {
	return notices(parse(events))
}
