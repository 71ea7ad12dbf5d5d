package env

import (
	"context"
	"errors"
	"os"
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
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Members[0].Addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
	cb, err := clientv3.New(clientv3.Config{Endpoints: []string{b.Addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
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
