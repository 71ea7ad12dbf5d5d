package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
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
	r, err := NewRedsync(Config{Servers: map[Backend][]Node{RedisBackend: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedsyncLeaseAndReasons: the lease redsync grants, and how each way
// of failing is reported, on five real nodes.
func TestRedsyncLeaseAndReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
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
	if la.Token == "" || la.Key != "job" || la.Start < before {
		t.Fatalf("lease %+v", la)
	}
	wantNodes(t, "a's lease", la.Nodes, "A", "B", "C", "D", "E")
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

	// Held on every node: ErrTaken, reason held, granted by none.
	lb, err := b.Acquire(ctx, "job", ttl)
	if !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("b's acquire: %v (reason %q), want held", err, ReasonOf(err))
	}
	wantNodes(t, "b's refused lease", lb.Nodes)

	// Extend renews on every node with the new TTL.
	le, err := a.Extend(ctx, la, 3*time.Second)
	if err != nil || le.Token != la.Token || le.Validity <= ttl {
		t.Fatalf("extend: %+v, %v", le, err)
	}
	if pttl := rs[2].Client().PTTL(ctx, "job").Val(); pttl <= ttl {
		t.Fatalf("PTTL on C after the extend: %v", pttl)
	}
	wantNodes(t, "the extended lease", le.Nodes, "A", "B", "C", "D", "E")

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
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
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
	wantNodes(t, "the lease granted with D and E down", l.Nodes, "A", "B", "C")
	le, err := c.Extend(ctx, l, 3*time.Second)
	if err != nil {
		t.Fatalf("extend with 3 of 5 nodes up: %v", err)
	}
	wantNodes(t, "the lease extended with D and E down", le.Nodes, "A", "B", "C")
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
	// C grants (and the library undoes it): the refused lease says so,
	// though the library's ErrTaken names only A and B.
	three := newRedsync(t, nodes)
	l, err = three.Acquire(ctx, "job", 3*time.Second)
	if !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("acquire with 2 of 3 taken: %v (reason %q), want held", err, ReasonOf(err))
	}
	wantNodes(t, "the lease refused by A and B", l.Nodes, "C")

	// Extend of a lease held on A and B (of five) with D and E silent:
	// renewed on two, silent on two, C says not ours: had D and E
	// renewed, a majority would hold it: unknown.
	tok := "the-lease"
	for _, r := range rs[:2] {
		r.Client().Set(ctx, "job2", tok, 10*time.Second)
	}
	lease := Lease{Key: "job2", Token: tok}
	if _, err := c.Extend(ctx, lease, time.Second); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend with 2 renewed and 2 silent: %v, want an unknown outcome", err)
	}
	// Its release: deleted on A and B, C not ours, D and E silent. The
	// library says no (fewer than a majority deleted), but no majority
	// can hold the value any more, and this release deleted it where it
	// was: released (Redlock's rule; scenario redlock-clock-jump's client
	// 1 releases so).
	if err := c.Release(ctx, lease); err != nil {
		t.Fatalf("release deleting on 2, 1 not holding, 2 silent: %v, want ok", err)
	}
	for _, r := range rs[:2] {
		if n := r.Client().Exists(ctx, "job2").Val(); n != 0 {
			t.Fatalf("node %s still holds the key after the release", r.Name)
		}
	}
	// Now A, B, C say not ours (the key is gone): a majority: not-held,
	// silent nodes or not.
	if err := c.Release(ctx, lease); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with 3 not holding, 2 silent: %v, want not-held", err)
	}
	if _, err := c.Extend(ctx, lease, time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend with 3 not holding, 2 silent: %v, want not-held", err)
	}

	// Deleted on A, B not ours, C, D and E silent: a majority could
	// still hold the value: unknown.
	cde := newRedsync(t, []Node{nodes[0], nodes[1], {Name: "C", Addr: closedAddr(t)}, {Name: "D", Addr: closedAddr(t)}, {Name: "E", Addr: closedAddr(t)}})
	rs[0].Client().Set(ctx, "job4", tok, 10*time.Second)
	if err := cde.Release(ctx, Lease{Key: "job4", Token: tok}); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("release deleting on 1, 1 not holding, 3 silent: %v, want an unknown outcome", err)
	}
	// Not held on A and B, three silent: unknown too.
	if err := cde.Release(ctx, Lease{Key: "job4", Token: tok}); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with 2 not holding, 3 silent: %v, want an unknown outcome", err)
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

func wantNodes(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: Nodes %v, want %v", what, got, want)
	}
}

// TestRedsyncNodesPartitioned: with two of five nodes behind a silent
// partition (every byte dropped, as scenario redlock-clock-jump's
// partitions do), a granted lease lists exactly the three that granted,
// in node order, and so does each of several acquires run at once by one
// client (each operation records its own nodes' answers); a refused
// acquire lists those that granted before the library undid them (none,
// when a majority refused).
func TestRedsyncNodesPartitioned(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	rs, nodes := startRedisNodes(t, 5)
	ctx := tctx(t)
	nw := env.NewNetwork()
	t.Cleanup(nw.Close)
	var via []Node
	for _, n := range nodes {
		l, err := nw.AddLink("redsync-"+n.Name, n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		via = append(via, Node{Name: n.Name, Addr: l.Listen})
	}
	c := newRedsync(t, via)
	if err := c.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	// Cut B and D (not the last two: the order of Nodes is node order,
	// not the order of the answers).
	for _, name := range []string{"B", "D"} {
		l, err := nw.Link("redsync-" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"upstream", "downstream"} {
			if err := l.AddToxic("cut-"+stream, env.PartitionToxic, stream, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	// TTL 4s: the library's acquire deadline (5%) is 200ms, the
	// per-node timeout: B and D time out, A, C and E answer well within.
	const ttl = 4 * time.Second
	l, err := c.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatalf("acquire with B and D partitioned: %v", err)
	}
	wantNodes(t, "the lease granted with B and D partitioned", l.Nodes, "A", "C", "E")
	le, err := c.Extend(ctx, l, ttl)
	if err != nil {
		t.Fatalf("extend with B and D partitioned: %v", err)
	}
	wantNodes(t, "the lease extended with B and D partitioned", le.Nodes, "A", "C", "E")
	if err := c.Release(ctx, le); err != nil {
		t.Fatalf("release with B and D partitioned: %v", err)
	}

	// Several acquires at once, on different keys, by the same client.
	var wait sync.WaitGroup
	errs := make([]error, 8)
	got := make([][]string, 8)
	for i := range errs {
		wait.Add(1)
		go func() {
			defer wait.Done()
			l, err := c.Acquire(ctx, fmt.Sprintf("many-%d", i), ttl)
			got[i], errs[i] = l.Nodes, err
			if err == nil {
				errs[i] = c.Release(ctx, l)
			}
		}()
	}
	wait.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("acquire %d at once: %v", i, errs[i])
		}
		wantNodes(t, fmt.Sprintf("acquire %d at once", i), got[i], "A", "C", "E")
	}

	// A holds another client's value: C and E grant, B and D silent: the
	// outcome hangs on them (unknown), and the lease names C and E.
	if err := rs[0].Client().Set(ctx, "held", "other", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	l, err = c.Acquire(ctx, "held", ttl)
	if err == nil || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with A taken, B and D silent: %v, want an unknown outcome", err)
	}
	wantNodes(t, "the acquire A refused", l.Nodes, "C", "E")
	// C and E hold it too: a majority refuses, whatever B and D did:
	// refused, held, granted by none.
	for _, i := range []int{2, 4} {
		if err := rs[i].Client().Set(ctx, "held", "other", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l, err = c.Acquire(ctx, "held", ttl)
	if !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("acquire with A, C and E taken, B and D silent: %v (reason %q), want refused, held", err, ReasonOf(err))
	}
	wantNodes(t, "the acquire A, C and E refused", l.Nodes)
}
