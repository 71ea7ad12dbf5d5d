package clients

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"locksim/env"
	"locksim/history"
)

// startRedisNodes starts n real redis-servers named A, B, C... and
// returns them with their Nodes.
func startRedisNodes(t *testing.T, n int) ([]*env.Redis, []Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rs []*env.Redis
	var nodes []Node
	for i := range n {
		name := string(rune('A' + i))
		r, err := env.StartRedis(ctx, env.RedisOptions{Name: name, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		rs = append(rs, r)
		nodes = append(nodes, Node{Name: name, Addr: r.Addr})
	}
	return rs, nodes
}

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func newRedsync(t *testing.T, nodes []Node) *Redsync {
	t.Helper()
	r, err := NewRedsync(Config{Redis: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedsyncLeaseAndReasons: the lease redsync grants, and how each way
// of failing is reported, on five real nodes.
func TestRedsyncLeaseAndReasons(t *testing.T) {
	rs, nodes := startRedisNodes(t, 5)
	ctx := tctx(t)
	a, b := newRedsync(t, nodes), newRedsync(t, nodes)
	for _, c := range []*Redsync{a, b} {
		if err := c.Warm(ctx); err != nil {
			t.Fatal(err)
		}
	}

	const ttl = time.Second
	before := history.Monotonic()
	la, err := a.Acquire(ctx, "job", ttl)
	after := history.Monotonic()
	if err != nil {
		t.Fatal(err)
	}
	if la.Token == "" || la.Key != "job" || la.Start < before || la.Nodes != nil {
		t.Fatalf("lease %+v", la)
	}
	// Validity: the library's Until(), ttl - elapsed - 1% drift counted
	// from its own start, which is after Start: it ends no later than
	// ttl - drift after the call returned.
	if la.Validity <= 0 || la.Start+int64(la.Validity) > after+int64(ttl-ttl/100) {
		t.Fatalf("validity %v from %v into the call, want it to end within %v of the call's return", la.Validity, time.Duration(la.Start-before), ttl-ttl/100)
	}
	for _, r := range rs {
		if v, err := r.Client().Get(ctx, "job").Result(); err != nil || v != la.Token {
			t.Fatalf("node %s holds %q (%v), want the lease's token %q", r.Name, v, err, la.Token)
		}
	}

	// Held on every node: ErrTaken, reason held.
	_, err = b.Acquire(ctx, "job", ttl)
	if !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("b's acquire: %v (reason %q), want held", err, ReasonOf(err))
	}

	// Extend renews on every node with the new TTL.
	le, err := a.Extend(ctx, la, 3*time.Second)
	if err != nil || le.Token != la.Token || le.Validity <= ttl {
		t.Fatalf("extend: %+v, %v", le, err)
	}
	if pttl := rs[2].Client().PTTL(ctx, "job").Val(); pttl <= ttl {
		t.Fatalf("PTTL on C after the extend: %v", pttl)
	}

	// A majority refusing a release (another value) is not-held.
	if err := b.Release(ctx, Lease{Key: "job", Token: "someone-else"}); !errors.Is(err, ErrNotHeld) || ReasonOf(err) != history.ReasonNotHeld {
		t.Fatalf("release with a foreign token: %v", err)
	}
	if err := a.Release(ctx, le); err != nil {
		t.Fatal(err)
	}
	// No key at all (ErrLockAlreadyExpired on every node): not-held.
	if err := a.Release(ctx, le); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second release: %v, want not-held", err)
	}
	if _, err := a.Extend(ctx, le, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend of a released lease: %v, want not-held", err)
	}
}

// TestRedsyncSilentNodes: when the nodes that did not answer could have
// decided the outcome, it is unknown; when the answers decide it, a
// refusal.
func TestRedsyncSilentNodes(t *testing.T) {
	rs, nodes := startRedisNodes(t, 3)
	ctx := tctx(t)
	// D and E are closed ports: a five-node client that reaches three.
	five := append(append([]Node{}, nodes...), Node{Name: "D", Addr: closedAddr(t)}, Node{Name: "E", Addr: closedAddr(t)})
	c := newRedsync(t, five)

	// Nobody holds the key: A, B, C grant, D, E are silent. Three of
	// five is a majority: granted.
	// TTL 3s: the library's acquire deadline (5%) is 150ms, room for the
	// first dial of each node.
	l, err := c.Acquire(ctx, "free", 3*time.Second)
	if err != nil {
		t.Fatalf("acquire with 3 of 5 nodes up: %v", err)
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatalf("release with 3 of 5 up: %v", err)
	}

	// A holds another client's value: B, C grant, D, E silent. Had both
	// silent nodes granted, it would have been a majority: unknown. The
	// library undoes its grants on B and C.
	if err := rs[0].Client().Set(ctx, "job", "other", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	l, err = c.Acquire(ctx, "job", 3*time.Second)
	if err == nil || errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrNotHeld) {
		t.Fatalf("acquire with 2 granted and 2 silent: %v, want an unknown outcome", err)
	}
	if want := []string{"B", "C"}; len(l.Nodes) != 2 || l.Nodes[0] != want[0] || l.Nodes[1] != want[1] {
		t.Fatalf("refused lease's Nodes %v, want %v", l.Nodes, want)
	}
	for _, r := range rs[1:] {
		if n := r.Client().Exists(ctx, "job").Val(); n != 0 {
			t.Fatalf("node %s still holds the key after the failed acquire", r.Name)
		}
	}

	// A and B hold another value: a majority taken whatever D and E do:
	// held (ErrTaken).
	if err := rs[1].Client().Set(ctx, "job", "other", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	three := newRedsync(t, nodes)
	if _, err := three.Acquire(ctx, "job", 3*time.Second); !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("acquire with 2 of 3 taken: %v (reason %q), want held", err, ReasonOf(err))
	}

	// Release and extend of a lease held on A and B (of five) with D and E
	// silent: freed on two, silent on two, C says not ours: a majority
	// could still have held it: unknown.
	tok := "the-lease"
	for _, r := range rs[:2] {
		r.Client().Set(ctx, "job2", tok, 10*time.Second)
	}
	lease := Lease{Key: "job2", Token: tok}
	if _, err := c.Extend(ctx, lease, time.Second); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend with 2 renewed and 2 silent: %v, want an unknown outcome", err)
	}
	if err := c.Release(ctx, lease); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with 2 freed and 2 silent: %v, want an unknown outcome", err)
	}
	// Now A, B, C say not ours (the key is gone): a majority: not-held,
	// silent nodes or not.
	if err := c.Release(ctx, lease); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with 3 not holding, 2 silent: %v, want not-held", err)
	}
	if _, err := c.Extend(ctx, lease, time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend with 3 not holding, 2 silent: %v, want not-held", err)
	}

	// Every node silent: unknown, within the per-node timeout.
	down := newRedsync(t, []Node{{Name: "A", Addr: closedAddr(t)}, {Name: "B", Addr: closedAddr(t)}, {Name: "C", Addr: closedAddr(t)}})
	start := time.Now()
	if _, err := down.Acquire(ctx, "job3", time.Second); err == nil || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with every node down: %v, want an unknown outcome", err)
	}
	if err := down.Release(ctx, Lease{Key: "job3", Token: "x"}); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with every node down: %v, want an unknown outcome", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("two calls with every node down took %v", took)
	}
}
