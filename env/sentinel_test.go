package env

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSentinelFailover: a primary, its replica and three sentinels
// (quorum 2); the primary is killed with SIGKILL; the sentinels' own
// election promotes the replica within the bound, and a go-redis failover
// client that found the primary through the sentinels writes to the new
// one.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and redis-sentinel")
	}
	if _, err := sentinelPath(); err != nil {
		t.Fatal(err) // make test installs redis-sentinel
	}
	sentinelFailover(t, "", "")
}

// TestSentinelInContainers: the same with the primary and its replica in
// containers of the Redis image and the sentinels in containers of the
// Sentinel image, each sentinel's dir (the config it rewrites) mounted.
func TestSentinelInContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultRedisImage, DefaultSentinelImage)
	sentinelFailover(t, DefaultRedisImage, DefaultSentinelImage)
}

func sentinelFailover(t *testing.T, redisImage, sentinelImage string) {
	dir := t.TempDir()
	a := startTestRedis(t, RedisOptions{Name: "A", Dir: dir, Image: redisImage})
	b := startTestRedis(t, RedisOptions{Name: "B", Dir: dir, ReplicaOf: a.Addr, Image: redisImage})
	ctx := context.Background()
	waitLink(t, b)

	started := time.Now()
	s, err := StartSentinel(ctx, SentinelOptions{Primary: a.Addr, Replicas: 1, Image: sentinelImage})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range s.Nodes {
		if _, ok := n.Proc().(*Container); ok != (sentinelImage != "") {
			t.Fatalf("sentinel %s is a %T (image %q)", n.Name, n.Proc(), sentinelImage)
		}
	}
	t.Logf("3 sentinels ready (primary, replica and each other found) in %v", time.Since(started).Round(time.Millisecond))
	if p, err := s.Primary(ctx); err != nil || p != a.Addr {
		t.Fatalf("primary %q, %v; want %s", p, err, a.Addr)
	}

	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.Addrs(),
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, DisableIdentity: true})
	defer fc.Close()
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Client().Get(ctx, "before").Result(); err != nil || v != "1" {
		t.Fatalf("the failover client's write is not on the primary: %q, %v", v, err)
	}
	waitReplicated(t, b, "before")

	killed := time.Now()
	a.Crash()
	const bound = 15 * time.Second
	deadline := killed.Add(bound)
	for {
		p, err := s.Primary(ctx)
		if err == nil && p == b.Addr {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover to %s within %v: %v, %v\n%s", b.Addr, bound, p, err, s.Nodes[0].tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("every sentinel names the replica as primary %v after the kill (down-after %v)",
		time.Since(killed).Round(time.Millisecond), DefaultSentinelDownAfter)
	if role, err := b.Client().Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		t.Fatalf("B's role after the failover: %v, %v", role, err)
	}
	for {
		err := fc.Set(ctx, "after", "2", 0).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failover client did not reach the new primary: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the failover client writes again %v after the kill", time.Since(killed).Round(time.Millisecond))
	if v, err := b.Client().Get(ctx, "after").Result(); err != nil || v != "2" {
		t.Fatalf("the failover client's write is not on the new primary: %q, %v", v, err)
	}
	if v, err := b.Client().Get(ctx, "before").Result(); err != nil || v != "1" {
		t.Fatalf("the replicated write is lost: %q, %v", v, err)
	}
	for _, n := range s.Nodes {
		b, err := os.ReadFile(n.LogPath())
		if err != nil || !strings.Contains(string(b), "+switch-master") {
			t.Fatalf("sentinel %s logged no +switch-master (%v)", n.Name, err)
		}
		// The election as this sentinel saw it, for -v.
		for _, l := range strings.Split(string(b), "\n") {
			for _, ev := range []string{"+sdown master", "+odown", "+vote-for-leader", "+elected-leader", "+promoted-slave", "+switch-master"} {
				if strings.Contains(l, ev) {
					t.Logf("sentinel %s: %s", n.Name, l)
				}
			}
		}
	}

	before, beforeC := LiveCount(), ContainerCount()
	tmp := s.tempDir
	s.Close()
	if sentinelImage == "" && LiveCount() != before-3 {
		t.Fatalf("Close left processes: %d live, was %d", LiveCount(), before)
	}
	if sentinelImage != "" && ContainerCount() != beforeC-3 {
		t.Fatalf("Close left containers: %d, was %d", ContainerCount(), beforeC)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("Close left %s", tmp)
	}
}

// waitLink waits until replica r's link to its primary is up.
func waitLink(t *testing.T, r *Redis) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.Client().Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s: link not up: %v\n%s", r.Name, err, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReplicated waits until replica r has key.
func waitReplicated(t *testing.T, r *Redis, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, err := r.Client().Exists(context.Background(), key).Result(); err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s does not have %s", r.Name, key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSentinelBadOptions(t *testing.T) {
	for _, o := range []SentinelOptions{
		{},
		{Primary: "no-port"},
		{Primary: "10.0.0.5:6379"},
		{Primary: "127.0.0.1:1", Quorum: 4},
		{Primary: "127.0.0.1:1", Sentinels: -1},
		{Primary: "127.0.0.1:1", DownAfter: time.Microsecond},
	} {
		s, err := StartSentinel(context.Background(), o)
		if err == nil {
			s.Close()
			t.Errorf("%+v: started", o)
		} else if errors.Is(err, ErrSentinelNotFound) {
			t.Errorf("%+v: %v, want the option refused first", o, err)
		}
	}
}
