package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestEtcdThreeMembers starts a real three-member etcd cluster, writes
// through one member and reads through another, survives the crash and
// restart of one member (quorum kept), and leaves nothing behind.
func TestEtcdThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd")
	}
	etcdThreeMembers(t, EtcdOptions{Members: 3})
}

// TestEtcdInContainers: the same on members in containers.
func TestEtcdInContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultEtcdImage)
	etcdThreeMembers(t, EtcdOptions{Members: 3, Image: DefaultEtcdImage})
}

func etcdThreeMembers(t *testing.T, o EtcdOptions) {
	ctx := context.Background()
	start := time.Now()
	e, err := StartEtcd(ctx, o)
	if errors.Is(err, ErrEtcdNotFound) {
		t.Fatal(err) // CI installs etcd-server; a missing binary is a failure, not a skip
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 members ready in %v", time.Since(start))
	dir := e.dir
	c := memberClient(t, e.Members[0].Addr)
	wctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	if _, err := c.Put(wctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	b, _ := e.Member("B")
	b.Crash()
	if b.Running() {
		t.Fatal("B still runs after Crash")
	}
	// If B led, the other two elect a new leader first (about a second,
	// more on a loaded machine); a write in between may time out.
	deadline := time.Now().Add(20 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := c.Put(pctx, "k", "v2")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two of three members should keep quorum: %v", err)
		}
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	cb := memberClient(t, b.Addr)
	got, err := cb.Get(wctx, "k")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v2" {
		t.Fatalf("read through the restarted member: %v, %v", got, err)
	}
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := cb.Get(wctx, "k"); err != nil || len(got.Kvs) != 0 {
		t.Fatalf("Reset left keys: %v, %v", got, err)
	}
	live := func() int { return LiveCount() + ContainerCount() } // processes or containers
	before := live()
	e.Close()
	if live() != before-3 {
		t.Fatalf("Close left processes: %d live, was %d", live(), before)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s", dir)
	}
}

// TestEtcdClockHook: a clock fault reaches a member of an etcd build with
// locksim's clock hook, and none reaches Debian's. A lease of 4 s on a
// member whose clocks run four times fast is gone in about 1 s; a jump
// of the wall clock alone leaves a lease as it was, since etcd times
// leases on the monotonic clock.
func TestEtcdClockHook(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd")
	}
	if deb, err := EtcdBinary(""); err == nil && EtcdClockless(deb) == "" {
		t.Errorf("Debian's etcd %s is said to take a clock fault", deb)
	}
	v := EtcdBuilds[len(EtcdBuilds)-1]
	bin, err := EtcdBinary(v)
	if err != nil {
		t.Fatal(err) // make test-deps builds it: a failure, not a skip
	}
	if why := EtcdClockless(bin); why != "" {
		t.Fatal(why)
	}
	ctx := context.Background()
	e, err := StartEtcd(ctx, EtcdOptions{Members: 1, Version: v})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	clock := e.Members[0].Clock()
	if clock == nil {
		t.Fatalf("etcd %s's member has no clock control", v)
	}
	c, err := e.client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ttlLeft := func(id clientv3.LeaseID) int64 {
		t.Helper()
		r, err := c.TimeToLive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.TTL // -1: gone
	}

	clock.Jump(time.Hour)
	l, err := c.Grant(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if left := ttlLeft(l.ID); left < 1 || left > 3 {
		t.Errorf("a 4s lease 1.5s after a 1h jump of the wall clock: %d s left, want 2 or so", left)
	}

	clock.SetRate(4)
	l, err = c.Grant(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if left := ttlLeft(l.ID); left != -1 {
		t.Errorf("a 4s lease 1.5s later on a clock four times fast: %d s left, want gone (-1)", left)
	}
}

// TestEtcdMemberLosesDisk: a member whose data dir is lost comes back as
// a new member (its ID changes, the cluster still has three), started
// empty, and a read through it finds what the cluster had.
func TestEtcdMemberLosesDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd")
	}
	ctx := context.Background()
	e, err := StartEtcd(ctx, EtcdOptions{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := memberClient(t, e.Members[0].Addr)
	wctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	if _, err := c.Put(wctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	idOf := func(name string) uint64 {
		t.Helper()
		list, err := c.MemberList(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Members) != 3 {
			t.Fatalf("%d members, want 3: %v", len(list.Members), list.Members)
		}
		for _, m := range list.Members {
			if m.Name == name {
				return m.ID
			}
		}
		t.Fatalf("no member %s in %v", name, list.Members)
		return 0
	}
	before := idOf("B")
	b, _ := e.Member("B")
	if err := b.LoseDisk(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("B's data dir is still there: %v", err)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if after := idOf("B"); after == before {
		t.Errorf("B came back with its old ID %x: not replaced", before)
	}
	cb := memberClient(t, b.Addr)
	got, err := cb.Get(wctx, "k")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("a read through B after its replacement: %v, %v", got, err)
	}
}

// memberClient is a client of the one member at addr, closed with the test.
func memberClient(t *testing.T, addr string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
