package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
)

func newRedislock(t *testing.T, nodes []Node) *Redislock {
	t.Helper()
	r, err := NewRedislock(Config{Servers: map[Backend][]Node{RedisBackend: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedislockLeaseAndReasons: the lease bsm/redislock grants on a real
// node, and its refusals.
func TestRedislockLeaseAndReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	rs, nodes := startRedisNodes(t, 1)
	ctx := tctx(t)
	a, b := newRedislock(t, nodes), newRedislock(t, nodes)
	if err := a.Warm(ctx); err != nil {
		t.Fatal(err)
	}

	const ttl = time.Second
	before := history.Monotonic()
	la, err := a.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if la.Start < before || la.Validity != ttl || len(la.Nodes) != 1 || la.Nodes[0] != "A" {
		t.Fatalf("lease %+v", la)
	}
	// The token is the key's whole value (no metadata): 16 random bytes,
	// base64url without padding.
	if v := rs[0].Client().Get(ctx, "job").Val(); v != la.Token || len(la.Token) != 22 {
		t.Fatalf("the key holds %q, the lease's token is %q", v, la.Token)
	}
	if _, err := b.Acquire(ctx, "job", ttl); !errors.Is(err, ErrNotAcquired) || ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("b's acquire: %v, want held", err)
	}

	// The library's lock cannot be rebuilt from a token: another client
	// refuses the lease without sending anything, and the lock stays.
	if err := b.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b's release of a's lease: %v, want not-held", err)
	}
	if _, err := b.Extend(ctx, la, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b's extend of a's lease: %v, want not-held", err)
	}
	if v := rs[0].Client().Get(ctx, "job").Val(); v != la.Token {
		t.Fatalf("after b's refused release the key holds %q", v)
	}

	le, err := a.Extend(ctx, la, 3*time.Second)
	if err != nil || le.Validity != 3*time.Second || le.Start < la.Start {
		t.Fatalf("extend: %+v, %v", le, err)
	}
	if pttl := rs[0].Client().PTTL(ctx, "job").Val(); pttl <= ttl {
		t.Fatalf("PTTL after the extend: %v", pttl)
	}
	if err := a.Release(ctx, le); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, le); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second release: %v, want not-held", err)
	}

	// Gone on the server (ErrLockNotHeld from Release, ErrNotObtained
	// from Refresh): not-held.
	l2, err := a.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	rs[0].Client().Del(ctx, "job")
	if _, err := a.Extend(ctx, l2, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend of a deleted key: %v, want not-held", err)
	}
	l3, err := a.Acquire(ctx, "job2", ttl)
	if err != nil {
		t.Fatal(err)
	}
	rs[0].Client().Set(ctx, "job2", "other", 0)
	if err := a.Release(ctx, l3); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of a key holding another value: %v, want not-held", err)
	}
	if v := rs[0].Client().Get(ctx, "job2").Val(); v != "other" {
		t.Fatalf("the refused release changed the key to %q", v)
	}
}

// TestRedislockUnreachable: a node that does not answer is an unknown
// outcome, within the per-node timeout (go-redis would otherwise retry
// the dial 5 times, 100ms apart).
func TestRedislockUnreachable(t *testing.T) {
	ctx := context.Background()
	r := newRedislock(t, []Node{{Name: "A", Addr: closedAddr(t)}})
	start := time.Now()
	_, err := r.Acquire(ctx, "job", time.Second)
	if err == nil || errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrNotHeld) {
		t.Fatalf("acquire against a closed port: %v, want an unknown outcome", err)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Fatalf("acquire against a closed port took %v; the per-node timeout is %v", took, Config{}.Timeout())
	}
}
