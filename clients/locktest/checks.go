// checks.go holds the checks the package doc describes, a method of
// suite each, in the order they run (checks, in locktest.go).

package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
)

func (s *suite) exclusive(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	_, err := b.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "b's acquire while a holds the lock")
	_, err = c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire while a holds the lock (after b was refused)")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
}

func (s *suite) releaseFrees(t testing.TB) {
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's release")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
	la2 := s.acquire(t, a, k, s.o.TTL, "a again, after b's release")
	wantOK(t, a.Release(s.ctx(t), la2), "a's second release")
}

// waitRelease: a lock whose acquire can wait (clients.Waiter) grants a
// waiter once the holder releases, with a fence above the holder's, and
// the waiter's lease is its own to release. (etcd's Mutex.Lock answers
// with the revision at which its turn came, not its key's: a release
// that compared the one with the key's found its own key "gone".)
func (s *suite) waitRelease(t testing.TB) {
	a, b := s.lock(t), s.lock(t)
	w, ok := b.(clients.Waiter)
	if !ok {
		t.Skip("the lock does not wait (clients.Waiter)")
	}
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	type grant struct {
		lease clients.Lease
		err   error
	}
	got := make(chan grant, 1)
	ctx := s.ctx(t)
	go func() {
		l, err := w.AcquireWait(ctx, k, s.o.TTL, s.o.Timeout/2)
		got <- grant{l, err}
	}()
	time.Sleep(s.o.Timeout / 8) // b waits behind a
	wantOK(t, a.Release(s.ctx(t), la), "a's release while b waits")
	g := <-got
	if g.err != nil {
		t.Fatalf("b's waiting acquire, after a's release: %s", describe(g.err))
	}
	if la.Fence != 0 && g.lease.Fence <= la.Fence {
		t.Errorf("b's fence %d after a's %d: want it above", g.lease.Fence, la.Fence)
	}
	wantOK(t, b.Release(s.ctx(t), g.lease), "b's release of the lease its wait was granted")
}

func (s *suite) staleRelease(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's release")
	wantNotHeld(t, a.Release(s.ctx(t), la), "a's second release of its released lease, while b holds the lock")
	_, err := c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after a's stale release (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release of its own lease after a's stale release")
}

func (s *suite) forgedRelease(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	f := la
	f.Token, f.Start = forged(), clients.Monotonic()
	wantNotHeld(t, b.Release(s.ctx(t), f), "b's release of a forged lease on a's key")
	wantNotHeld(t, a.Release(s.ctx(t), f), "a's release of a forged lease on its own key")
	_, err := c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after the forged releases (a must still hold the lock)")
	wantOK(t, a.Release(s.ctx(t), la), "a's release of its own lease after the forged releases")
}

func (s *suite) extend(t testing.TB) {
	if s.o.NoExtend {
		t.Skip("the lock does not extend (Options.NoExtend)")
	}
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	ttl, step := s.o.TTL, time.Duration(0)
	if !s.o.NoExpiry {
		ttl, step = s.o.ShortTTL, s.o.ShortTTL*6/10
	}
	la := s.acquire(t, a, k, ttl, "a")
	time.Sleep(step)
	le, err := a.Extend(s.ctx(t), la, ttl)
	after := clients.Monotonic()
	if err != nil {
		t.Fatalf("a's extend of its held lease, %v into its %v TTL: %s", step, ttl, describe(err))
	}
	if le.Token != la.Token {
		t.Errorf("the extended lease's Token %q differs from the lease's %q", le.Token, la.Token)
	}
	// An extended lease may keep its first Start (a lock without expiry
	// returns the lease as it was; a TTL lock that did would only be
	// cautious), but Start must not be later than the extend's request.
	s.checkLease(t, le, k, ttl, la.Start, after, "the extended lease")
	time.Sleep(step)
	if !le.StillValid(s.o.WallClock) {
		t.Errorf("the extended lease is no longer valid %v after the extend (Validity %v of a %v TTL)", step, le.Validity, ttl)
	}
	_, err = b.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, fmt.Sprintf("b's acquire %v after a's first grant (past its TTL, within the extended one)", 2*step))
	wantOK(t, a.Release(s.ctx(t), le), "a's release of the extended lease")
	lb := s.acquire(t, b, k, ttl, "b, after a released the extended lease")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

func (s *suite) extendLost(t testing.TB) {
	if s.o.NoExtend {
		t.Skip("the lock does not extend (Options.NoExtend)")
	}
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	_, err := a.Extend(s.ctx(t), la, s.o.TTL)
	wantNotHeld(t, err, "a's extend of its released lease")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's refused extend")
	_, err = a.Extend(s.ctx(t), la, s.o.TTL)
	wantNotHeld(t, err, "a's extend of its released lease, while b holds the lock")
	_, err = c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after a's refused extends (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

// expiryMargin is how long after a lease's TTL (from its acquire's
// start) the expiry check counts it gone from every server: a SET that
// reached a node late keeps the key there that much longer.
const expiryMargin = 250 * time.Millisecond

func (s *suite) expiry(t testing.TB) {
	if s.o.NoExpiry {
		t.Skip("leases do not expire (Options.NoExpiry)")
	}
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	ttl := s.o.ShortTTL
	la := s.acquire(t, a, k, ttl, "a")
	_, err := b.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, "b's acquire at once")
	// Poll until b gets the lock, bounded.
	giveUp := la.Start + int64(ttl+1500*time.Millisecond)
	var lb clients.Lease
	for {
		time.Sleep(20 * time.Millisecond)
		lb, err = b.Acquire(s.ctx(t), k, s.o.TTL)
		if err == nil {
			break
		}
		if !errors.Is(err, clients.ErrNotAcquired) {
			t.Fatalf("b's acquire while waiting for a's lease to expire: %s", describe(err))
		}
		if clients.Monotonic() > giveUp {
			t.Fatalf("a's %v lease never expired: b still refused %v after a's grant (%s)",
				ttl, time.Duration(clients.Monotonic()-la.Start).Round(time.Millisecond), describe(err))
		}
	}
	granted := time.Duration(clients.Monotonic() - la.Start)
	t.Logf("b granted %v after a's acquire began (TTL %v, a's validity %v)", granted.Round(time.Millisecond), ttl, la.Validity)
	if la.StillValid(s.o.WallClock) {
		t.Errorf("a's lease is still valid by the lock's own measure (Validity %v, Deadline %v) after b was granted the lock %v after a's acquire began: two holders",
			la.Validity, la.Deadline, granted.Round(time.Millisecond))
	}
	// b may be granted by a majority while a's key still lives on a node
	// its SET reached a little later: a's release would then rightly
	// delete its own key there. Wait until a's key has expired on every
	// node (its TTL from a's start, plus a margin for a late SET).
	if rest := time.Duration(la.Start + int64(ttl+expiryMargin) - clients.Monotonic()); rest > 0 {
		time.Sleep(rest)
	}
	_, err = a.Extend(s.ctx(t), la, ttl)
	wantNotHeld(t, err, "a's extend of its expired lease, while b holds the lock")
	wantNotHeld(t, a.Release(s.ctx(t), la), "a's release of its expired lease, while b holds the lock")
	_, err = c.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, "c's acquire after a's stale extend and release (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

func (s *suite) validityBound(t testing.TB) {
	if s.o.NoExpiry {
		t.Skip("leases do not expire (Options.NoExpiry)")
	}
	a := s.lock(t)
	ttl := s.o.TTL
	// A reply delayed d left the server at most at after-d, so the
	// request was sent no later than that: a lease valid past
	// after - d + ttl certainly counts its validity from after the
	// request was sent.
	try := func(k, what string, d time.Duration) {
		l, err := a.Acquire(s.ctx(t), k, ttl)
		after := clients.Monotonic()
		if err != nil {
			t.Logf("%s: not granted, nothing to bound: %s", what, describe(err))
			return
		}
		defer func() { _ = a.Release(s.ctx(t), l) }()
		if !l.Deadline.IsZero() {
			t.Logf("%s: the lease is timed by the wall clock (Deadline %v): the expiry check judges it", what, l.Deadline)
			return
		}
		if over := time.Duration(l.Start + int64(l.Validity) - (after - int64(d) + int64(ttl))); over > 0 {
			t.Errorf("%s: the lease is valid until %v after the TTL counted from the latest moment its request could have left (Start %v before the call returned, Validity %v of %v): its validity is counted from after the request was sent",
				what, over, time.Duration(after-l.Start), l.Validity, ttl)
		}
	}
	try(key(t), "a's acquire", 0)
	if s.o.Delay == nil {
		t.Log("no Options.Delay: the bound was checked without delayed replies only")
		return
	}
	d := ttl / 30
	restore := once(s.o.Delay(t, d))
	defer restore()
	try(key(t), fmt.Sprintf("a's acquire with every reply delayed %v", d), d)
	restore()
	s.spentGrant(t, a)
}

// spentGrant is validity-bound's last check: with every reply delayed
// past a short TTL, the acquire must be refused, or grant a lease with
// validity left when the call returns. A lock that skips the validity
// check grants a lease already spent. The delay stays well inside the
// per-node timeout (clients.DefaultNodeTimeout), so the replies are read.
func (s *suite) spentGrant(t testing.TB, a clients.Lock) {
	ttl, d := clients.DefaultNodeTimeout/4, clients.DefaultNodeTimeout/2
	restore := once(s.o.Delay(t, d))
	defer restore()
	l, err := a.Acquire(s.ctx(t), key(t), ttl)
	after := clients.Monotonic()
	restore()
	if err != nil {
		t.Logf("with every reply delayed %v past the %v TTL: not granted: %s", d, ttl, describe(err))
		return
	}
	defer func() { _ = a.Release(s.ctx(t), l) }()
	if !l.Deadline.IsZero() {
		return // timed by the wall clock: the expiry check judges it
	}
	if end := l.Start + int64(l.Validity); end <= after {
		t.Errorf("with every reply delayed %v past the %v TTL, the acquire granted a lease already spent %v before the call returned: no validity check",
			d, ttl, time.Duration(after-end))
	}
}

func (s *suite) unreachable(t testing.TB) {
	if s.o.Cut == nil {
		t.Skip("no Options.Cut: the servers cannot be made unreachable")
	}
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	_, err := b.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "b's acquire while a holds the lock")
	restore := once(s.o.Cut(t))
	defer restore()
	// A lock may wait for its context (etcd's client does): give each
	// call to the unreachable servers 1s at most.
	cutCtx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), min(s.o.Timeout, time.Second))
		t.Cleanup(cancel)
		return ctx
	}
	if !s.o.LocalExtend {
		_, err = a.Extend(cutCtx(), la, s.o.TTL)
		wantUnknown(t, err, "a's extend of its held lease, no server reachable")
	}
	wantUnknown(t, a.Release(cutCtx(), la), "a's release of its held lease, no server reachable")
	_, err = b.Acquire(cutCtx(), k, s.o.TTL)
	wantUnreachableAcquire(t, err, "b's acquire (connected before), no server reachable")
	c := s.newLock(t) // built after the cut: its first dial is refused
	_, err = c.Acquire(cutCtx(), key(t), s.o.TTL)
	wantUnreachableAcquire(t, err, "c's acquire (built after the cut, on a free key), no server reachable")
	restore()
	_ = a.Release(s.ctx(t), la) // tidy up; a session lock already went with its connection
}
