package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locksim/locksim/env"
)

func pingRTTs(t *testing.T, addr string, n int) []time.Duration {
	t.Helper()
	c := newClient(addr, 2*time.Second)
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	if err := c.Ping(ctx).Err(); err != nil { // connect first
		t.Fatal(err)
	}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

// TestLatencyAddsRTT: a 100ms upstream latency toxic adds 100ms ±30ms to
// the median of 5 PINGs through the proxy; 50ms on both streams adds
// 100ms ±30ms too; Heal takes it away (median back under 30ms).
func TestLatencyAddsRTT(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	n := newNetwork(t)
	l := addLink(t, n, 1, "A", r.Addr)
	tg := &Target{Redis: map[string]*env.Redis{"A": r}, Network: n}
	base := median(pingRTTs(t, l.Listen, 5))
	for _, f := range []*Latency{
		{Client: 1, Nodes: []string{"A"}, Delay: 100 * time.Millisecond, Stream: "upstream"},
		{Client: 1, Nodes: []string{"A"}, Delay: 50 * time.Millisecond},
	} {
		inject(t, f, tg)
		added := median(pingRTTs(t, l.Listen, 5)) - base
		if added < 70*time.Millisecond || added > 130*time.Millisecond {
			t.Errorf("%s: added RTT %v, want 100ms ±30ms", f.Detail(), added)
		}
		heal(t, f, tg)
	}
	if m := median(pingRTTs(t, l.Listen, 5)); m > 30*time.Millisecond {
		t.Fatalf("after heal the median RTT is %v", m)
	}
}

// TestLatencyLosesItsChunkToALaterFault: a SET held 400ms on its way up
// by a latency toxic is lost when client 1's link is cut (a partition)
// or reset 150ms into the delay: the key is not set, 500ms after the
// delay would have ended. Without the pass-through toxic after the
// latency, toxiproxy lets the held chunk go at the second toxic's
// arrival, and the SET lands.
func TestLatencyLosesItsChunkToALaterFault(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startRedis(t, env.RedisOptions{Name: "A"})
	n := newNetwork(t)
	l := addLink(t, n, 1, "A", r.Addr)
	tg := &Target{Redis: map[string]*env.Redis{"A": r}, Network: n}
	ctx := ctxT(t, 20*time.Second)
	for _, later := range []Breaker{
		&Partition{Client: 1, Nodes: []string{"A"}},
		&ConnReset{Client: 1, Nodes: []string{"A"}},
	} {
		key := fmt.Sprintf("held-%T", later)
		c := newClient(l.Listen, 2*time.Second)
		if err := c.Ping(ctx).Err(); err != nil { // connect first
			t.Fatal(err)
		}
		delay := &Latency{Client: 1, Nodes: []string{"A"}, Delay: 400 * time.Millisecond, Stream: "upstream"}
		inject(t, delay, tg)
		sent := make(chan error, 1)
		go func() { sent <- c.Set(ctx, key, "v", 0).Err() }()
		time.Sleep(150 * time.Millisecond)
		inject(t, later, tg)
		time.Sleep(750 * time.Millisecond)
		n, err := r.Client().Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%T struck during the delay: the SET held back reached Redis anyway", later)
		}
		heal(t, later, tg)
		heal(t, delay, tg)
		c.Close()
		<-sent
	}
}

// TestPartitionTimesOut: with client 1 cut off from A, a GET through its
// link to A times out (300ms timeout) while its link to B answers; after
// Heal, A answers again.
func TestPartitionTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	a := startRedis(t, env.RedisOptions{Name: "A"})
	b := startRedis(t, env.RedisOptions{Name: "B"})
	n := newNetwork(t)
	la := addLink(t, n, 1, "A", a.Addr)
	lb := addLink(t, n, 1, "B", b.Addr)
	tg := &Target{Redis: map[string]*env.Redis{"A": a, "B": b}, Network: n}
	ca := newClient(la.Listen, 300*time.Millisecond)
	defer ca.Close()
	cb := newClient(lb.Listen, 300*time.Millisecond)
	defer cb.Close()
	ctx := ctxT(t, 10*time.Second)
	if err := ca.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f := &Partition{Client: 1, Nodes: []string{"A"}}
	inject(t, f, tg)
	t0 := time.Now()
	err := ca.Get(ctx, "k").Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET through the cut link: %v after %v, want a timeout", err, time.Since(t0))
	}
	if err := cb.Ping(ctx).Err(); err != nil {
		t.Fatalf("the other link failed during the partition: %v", err)
	}
	heal(t, f, tg)
	if err := ca.Ping(ctx).Err(); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// TestConnResetFreesAdvisoryLock: a PostgreSQL session through client 1's
// proxy takes pg_try_advisory_lock(7); a direct session cannot. With
// ConnReset on Nodes ["pg"], the holder's next query fails (reset), the
// server ends its session, and the direct session takes the lock within
// 1s. After Heal a new session through the proxy works.
func TestConnResetFreesAdvisoryLock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	pg, l, tg, holder, other := pgLinkSetup(t)
	ctx := ctxT(t, 15*time.Second)
	if ok, err := tryLock(ctx, holder, 7); err != nil || !ok {
		t.Fatalf("holder: %v %v, want the lock", ok, err)
	}
	if ok, err := tryLock(ctx, other, 7); err != nil || ok {
		t.Fatalf("other: %v %v, want refused", ok, err)
	}
	f := &ConnReset{Client: 1, Nodes: []string{PGNode}}
	inject(t, f, tg)
	// Idle, the holder's session (and lock) survive.
	if ok, err := tryLock(ctx, other, 7); err != nil || ok {
		t.Fatalf("other while the holder is idle: %v %v, want refused", ok, err)
	}
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := holder.Exec(qctx, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("the holder's query went through a reset_peer link")
	}
	t.Logf("holder: %v", err)
	waitLockFreed(ctx, t, other, 7, "the reset")
	heal(t, f, tg)
	again := pgConnect(t, pg, l.Listen)
	if _, err := again.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// TestConnDropFreesAdvisoryLockAtOnce: closing an idle holder's connection
// frees its session lock without the holder speaking.
func TestConnDropFreesAdvisoryLockAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	pg, l, tg, holder, other := pgLinkSetup(t)
	ctx := ctxT(t, 15*time.Second)
	if ok, err := tryLock(ctx, holder, 8); err != nil || !ok {
		t.Fatalf("holder: %v %v, want the lock", ok, err)
	}
	f := &ConnDrop{Client: 1, Nodes: []string{PGNode}}
	inject(t, f, tg)
	waitLockFreed(ctx, t, other, 8, "the drop")
	heal(t, f, tg)
	again := pgConnect(t, pg, l.Listen)
	if _, err := again.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// pgLinkSetup starts PostgreSQL, a proxy c1-pg to it and a Target holding
// that link; holder connects through the proxy, other directly.
func pgLinkSetup(t *testing.T) (pg *env.Postgres, l *env.Link, tg *Target, holder, other *pgx.Conn) {
	t.Helper()
	pg = startPG(t)
	n := newNetwork(t)
	l, err := n.AddLink(env.LinkName(1, PGNode), pg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	tg = &Target{Postgres: pg, Network: n}
	return pg, l, tg, pgConnect(t, pg, l.Listen), pgConnect(t, pg, pg.Addr())
}

// waitLockFreed waits up to 1s for other to take advisory lock key.
func waitLockFreed(ctx context.Context, t *testing.T, other *pgx.Conn, key int64, after string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		ok, err := tryLock(ctx, other, key)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock was not freed within 1s of %s", after)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
