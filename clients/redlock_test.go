package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
)

func newRedlock(t *testing.T, nodes []Node, plainDel bool) *Redlock {
	t.Helper()
	r, err := NewRedlock(Config{Servers: map[Backend][]Node{RedisBackend: nodes}}, plainDel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func wantUnknownOutcome(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("%s: %v, want an unknown outcome (neither ErrNotHeld nor ErrNotAcquired)", what, err)
	}
}

func wantNotHeldRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotHeld) || ReasonOf(err) != history.ReasonNotHeld {
		t.Fatalf("%s: %v (reason %q), want refused, not-held", what, err, ReasonOf(err))
	}
}

// TestRedlockSilentNodes: a node that did not answer a release or an
// extend counts as unknown, never as one that does not hold the token.
// No node answered: unknown; some answered and none held the token:
// not-held; any deleted: released; extend keeps its majority rule.
func TestRedlockSilentNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	rs, nodes := startRedisNodes(t, 3)
	ctx := tctx(t)
	// D and E are closed ports.
	five := append(append([]Node{}, nodes...), Node{Name: "D", Addr: closedAddr(t)}, Node{Name: "E", Addr: closedAddr(t)})
	c := newRedlock(t, five, false)
	if err := c.Warm(ctx); err == nil {
		t.Fatal("warm reached D and E, which are closed ports")
	}

	// Granted by A, B, C; renewed on them (a majority), released.
	l, err := c.Acquire(ctx, "job", 3*time.Second)
	if err != nil {
		t.Fatalf("acquire with 3 of 5 up: %v", err)
	}
	wantNodes(t, "the lease", l.Nodes, "A", "B", "C")
	if l, err = c.Extend(ctx, l, 3*time.Second); err != nil {
		t.Fatalf("extend with 3 of 5 up: %v", err)
	}
	wantNodes(t, "the extended lease", l.Nodes, "A", "B", "C")
	if err := c.Release(ctx, l); err != nil {
		t.Fatalf("release with 3 of 5 up: %v", err)
	}
	// A, B, C answered that they do not hold it, D and E silent:
	// not-held, both.
	_, err = c.Extend(ctx, l, 3*time.Second)
	wantNotHeldRefusal(t, "extend of a released lease, 2 nodes silent", err)
	wantNotHeldRefusal(t, "release of a released lease, 2 nodes silent", c.Release(ctx, l))

	// Held on A only (B and C answer no key): the release deletes it on
	// A: ok. The extend renews on A alone, fewer than a majority
	// whatever D and E did: not-held (the majority rule).
	tok := "the-lease"
	rs[0].Client().Set(ctx, "job2", tok, 10*time.Second)
	lease := Lease{Key: "job2", Token: tok}
	_, err = c.Extend(ctx, lease, time.Second)
	wantNotHeldRefusal(t, "extend renewing on A only, 2 silent", err)
	if err := c.Release(ctx, lease); err != nil {
		t.Fatalf("release deleting on A, 2 silent: %v, want ok", err)
	}
	if n := rs[0].Client().Exists(ctx, "job2").Val(); n != 0 {
		t.Fatal("A still holds the key after the release")
	}

	// Only A reachable, holding another value: it answered, and no
	// node that answered holds the token: not-held.
	a := newRedlock(t, []Node{nodes[0], {Name: "B", Addr: closedAddr(t)}, {Name: "C", Addr: closedAddr(t)}}, false)
	rs[0].Client().Set(ctx, "job3", "other", 10*time.Second)
	lease = Lease{Key: "job3", Token: tok}
	_, err = a.Extend(ctx, lease, time.Second)
	wantNotHeldRefusal(t, "extend, A holding another value, B and C silent", err)
	wantNotHeldRefusal(t, "release, A holding another value, B and C silent", a.Release(ctx, lease))
	if v := rs[0].Client().Get(ctx, "job3").Val(); v != "other" {
		t.Fatalf("A holds %q after the refused release, want the other client's value", v)
	}

	// No node answered: unknown, for Redlock, the single-node lock and
	// its plain-DEL mutant alike.
	down := newRedlock(t, []Node{{Name: "A", Addr: closedAddr(t)}, {Name: "B", Addr: closedAddr(t)}, {Name: "C", Addr: closedAddr(t)}}, false)
	one := newRedlock(t, []Node{{Name: "A", Addr: closedAddr(t)}}, false)
	plain := newRedlock(t, []Node{{Name: "A", Addr: closedAddr(t)}}, true)
	for _, x := range []struct {
		name string
		r    *Redlock
	}{{"redlock", down}, {"redis", one}, {"redis-plain-del", plain}} {
		start := time.Now()
		_, err := x.r.Extend(ctx, lease, time.Second)
		wantUnknownOutcome(t, x.name+": extend, no node answering", err)
		wantUnknownOutcome(t, x.name+": release, no node answering", x.r.Release(ctx, lease))
		if took := time.Since(start); took > time.Second {
			t.Fatalf("%s: extend and release with no node answering took %v", x.name, took)
		}
	}
}

// TestRedlockUnreachableMidLease: the single-node lock's lease, held,
// then its node cut off (stopped): extend and release are unknown, not
// not-held.
func TestRedlockUnreachableMidLease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	rs, nodes := startRedisNodes(t, 1)
	ctx := tctx(t)
	c := newRedlock(t, nodes, false)
	if err := c.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "job", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes(t, "the lease", l.Nodes, "A")
	rs[0].Stop()
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = c.Extend(cctx, l, 3*time.Second)
	wantUnknownOutcome(t, "extend, the node stopped", err)
	wantUnknownOutcome(t, "release, the node stopped", c.Release(cctx, l))
}

// TestRedlockAcquireWait: an acquire that waits retries while the lock is
// held and is granted once it is released; its lease counts from the
// attempt that won it, not from the first (node-redlock#296), so after a
// wait longer than the TTL it still ends after the grant. Refused until
// wait has passed, it is a refusal (held).
func TestRedlockAcquireWait(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	_, nodes := startRedisNodes(t, 3)
	ctx := tctx(t)
	a, b := newRedlock(t, nodes, false), newRedlock(t, nodes, false)
	held, err := a.Acquire(ctx, "job", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.AcquireWait(ctx, "job", 500*time.Millisecond, 600*time.Millisecond)
	if !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("waiting on a held lock: %v (reason %q), want refused, held", err, ReasonOf(err))
	}
	go func() {
		time.Sleep(1200 * time.Millisecond)
		a.Release(context.Background(), held)
	}()
	l, err := b.AcquireWait(ctx, "job", 500*time.Millisecond, 5*time.Second)
	granted := history.Monotonic()
	if err != nil {
		t.Fatalf("waiting for a lock released in 1.2s: %v", err)
	}
	if end := l.Start + int64(l.Validity); end <= granted {
		t.Fatalf("the lease won on a retry ended %v before it was granted", time.Duration(granted-end))
	}
}
