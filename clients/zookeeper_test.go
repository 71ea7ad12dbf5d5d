package clients_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clients/locktest"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
)

func startZooKeeper(t *testing.T, members int) *env.ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*env.ZooKeeperStartTimeout)
	defer cancel()
	z, err := env.StartZooKeeper(ctx, env.ZooKeeperOptions{Members: members})
	if err != nil {
		t.Fatal(err) // make test installs zookeeper: a missing one is a failure
	}
	t.Cleanup(z.Close)
	return z
}

// zkNodes are the members as a client reaching them straight (no proxy).
func zkNodes(z *env.ZooKeeper) []clients.Node {
	var out []clients.Node
	for _, m := range z.Members {
		out = append(out, clients.Node{Name: m.Name, Addr: m.Addr})
	}
	return out
}

func newZK(t testing.TB, nodes []clients.Node, id int) *clients.ZooKeeperLock {
	t.Helper()
	l, err := clients.NewZooKeeperLock(clients.ZooKeeperConfig{Members: nodes, ClientID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func zctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestZooKeeperLockContention: two clients contend on a three-member
// ensemble: one is granted, the other refused (held); after the release
// the other is granted with a higher fence (the znodes' czxid); the
// holder's session closing (its client's Close) frees the lock at once.
func TestZooKeeperLockContention(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startZooKeeper(t, 3)
	nodes := zkNodes(z)
	ctx := zctx(t)
	a, b := newZK(t, nodes, 1), newZK(t, nodes, 2)
	const ttl = 2 * time.Second

	before := history.Monotonic()
	la, err := a.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if la.Key != "job" || !strings.HasPrefix(la.Token, clients.ZooKeeperRoot+"/job/") || la.Fence <= 0 ||
		la.Start < before || la.Validity != 0 {
		t.Fatalf("lease %+v", la)
	}
	if _, err := b.Acquire(ctx, "job", ttl); !errors.Is(err, clients.ErrNotAcquired) || clients.ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("b's acquire: %v, want held", err)
	}
	// The refused client left no znode: only a's is in the queue.
	zc, err := z.Connect(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if kids, _, err := zc.Children(clients.ZooKeeperRoot + "/job"); err != nil || len(kids) != 1 || !strings.HasSuffix(la.Token, kids[0]) {
		t.Fatalf("the queue after the refusal: %v, %v (a's znode %s)", kids, err, la.Token)
	}
	if _, err := a.Extend(ctx, la, ttl); err != nil {
		t.Fatalf("extend a held lease: %v", err)
	}
	if err := b.Release(ctx, la); !errors.Is(err, clients.ErrNotHeld) {
		t.Fatalf("b releases a's lease: %v, want not-held", err)
	}

	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatalf("b after a's release: %v", err)
	}
	if lb.Fence <= la.Fence {
		t.Fatalf("fence went from %d to %d: want it to rise", la.Fence, lb.Fence)
	}
	if _, err := a.Extend(ctx, la, ttl); !errors.Is(err, clients.ErrNotHeld) {
		t.Fatalf("extend of a released lease: %v, want not-held", err)
	}
	if _, err := a.Acquire(ctx, "job", ttl); clients.ReasonOf(err) != history.ReasonHeld {
		t.Fatalf("a while b holds: %v, want held", err)
	}

	// b's client closes: its session ends, the ensemble deletes its znode.
	b.Close()
	la2, err := a.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatalf("a after b's session closed: %v", err)
	}
	if la2.Fence <= lb.Fence {
		t.Fatalf("fence went from %d to %d: want it to rise", lb.Fence, la2.Fence)
	}
}

// TestZooKeeperLockSessionExpiry: a holder cut off from the ensemble (its
// links down, the connections reset) keeps its session until the session
// timeout; then the ensemble expires it and a rival is granted, with a
// higher fence. The holder, reconnected, learns of it at its next call:
// extend and release are refused not-held.
func TestZooKeeperLockSessionExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startZooKeeper(t, 3)
	links, via := linkMembers(t, z, func(m string) string { return env.LinkName(1, m) })
	ctx := zctx(t)
	holder, rival := newZK(t, via, 1), newZK(t, zkNodes(z), 2)
	const ttl = time.Second

	lh, err := holder.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	for _, l := range links {
		l.Disable()
	}
	var lr clients.Lease
	for {
		lr, err = rival.Acquire(ctx, "job", ttl)
		if err == nil {
			break
		}
		if clients.ReasonOf(err) != history.ReasonHeld {
			t.Fatalf("the rival's acquire: %v", err)
		}
		if time.Since(cut) > 10*time.Second {
			t.Fatal("the holder's session did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(cut)
	t.Logf("the rival is granted %v after the holder was cut off (session timeout %v, tick %v)",
		took.Round(time.Millisecond), ttl, z.TickTime)
	// The ensemble may not expire a session before its timeout.
	if took < ttl-50*time.Millisecond {
		t.Fatalf("the rival was granted %v after the cut, before the holder's %v session timeout", took, ttl)
	}
	if lr.Fence <= lh.Fence {
		t.Fatalf("fence went from %d to %d: want it to rise", lh.Fence, lr.Fence)
	}

	for _, l := range links {
		if err := l.Enable(); err != nil {
			t.Fatal(err)
		}
	}
	// Reconnected, the holder's client hears that its session expired.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := holder.Extend(ctx, lh, ttl)
		if errors.Is(err, clients.ErrNotHeld) && clients.ReasonOf(err) == history.ReasonNotHeld {
			break
		}
		if err == nil {
			t.Fatal("the holder's extend succeeded after its session expired")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's extend: %v, want not-held", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := holder.Release(ctx, lh); clients.ReasonOf(err) != history.ReasonNotHeld {
		t.Fatalf("the holder's release: %v, want not-held", err)
	}
	if _, err := rival.Extend(ctx, lr, ttl); err != nil {
		t.Fatalf("the holder's release touched the rival's lock: %v", err)
	}
}

// TestZooKeeperLockConformance runs locktest on the ZooKeeper lock, every
// client reaching each member of a three-member ensemble through its own
// link (Cut disables them all). Its leases have no expiry of their own:
// Validity 0, the session keeps the znode.
func TestZooKeeperLockConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startZooKeeper(t, 3)
	// One link to each member, which every client of the suite shares (as
	// the conformance test's locks do): Cut then reaches clients built
	// after it too.
	links, via := linkMembers(t, z, func(m string) string { return "zk-" + m })
	client := 0
	newLock := func(t testing.TB) clients.Lock {
		client++
		return newZK(t, via, client)
	}
	opts := locktest.Options{
		NoExpiry: true,
		Cut: func(t testing.TB) func() {
			for _, l := range links {
				l.Disable()
			}
			return func() {
				for _, l := range links {
					if err := l.Enable(); err != nil {
						t.Errorf("restore link %s: %v", l.Name, err)
					}
				}
			}
		},
	}
	start := time.Now()
	locktest.TestLock(t, newLock, opts)
	t.Logf("suite took %v", time.Since(start).Round(time.Millisecond))
}

// linkMembers puts a proxy, named by name, in front of each member of z,
// and returns the links and the members as a client reaches them.
func linkMembers(t *testing.T, z *env.ZooKeeper, name func(member string) string) ([]*env.Link, []clients.Node) {
	t.Helper()
	net := env.NewNetwork()
	t.Cleanup(net.Close)
	var links []*env.Link
	var via []clients.Node
	for _, m := range z.Members {
		l, err := net.AddLink(name(m.Name), m.Addr)
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, l)
		via = append(via, clients.Node{Name: m.Name, Addr: l.Listen})
	}
	return links, via
}
