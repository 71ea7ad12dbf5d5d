package nemesis

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/env"
)

func waitReplicated(t *testing.T, primary, replica *env.Redis, key string) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	if err := primary.Client().Set(ctx, key, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := replica.Client().Get(ctx, key).Result(); v == "1" {
			return
		}
		if time.Now().After(deadline) {
			info, _ := replica.Client().Info(ctx, "replication").Result()
			t.Fatalf("replica did not sync within 5s:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailoverLosesUnreplicatedKey: a primary A and its asynchronous
// replica, which replicates through a proxy. The replication stream is
// held in that proxy (a timeout toxic) just before client 1 writes the
// lock key on A: A acknowledges it at once (asynchronous replication does
// not wait for the replica). Failover kills A with SIGKILL and promotes
// the replica: the acknowledged key is missing there, the promoted
// replica accepts writes, and client 1's link to "A" now reaches it.
// Heal brings A back as a replica of the new primary.
//
// Why hold the stream in the network rather than SIGSTOP the replica:
// with the replica stopped, the primary's bytes still land in the
// replica's kernel receive buffer, and the resumed replica applies them
// (tried: the key survived). Async replication's real window, the time
// between the primary's reply and the bytes leaving its output buffer,
// is microseconds on loopback and cannot be hit by timing a kill -9. A
// lagging replication link is the same state, opened wide and on purpose.
func TestFailoverLosesUnreplicatedKey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server (a primary and a replica)")
	}
	primary := startRedis(t, env.RedisOptions{Name: "A"})
	n := newNetwork(t)
	repl, err := n.AddLink("repl-A", primary.Addr)
	if err != nil {
		t.Fatal(err)
	}
	replica := startRedis(t, env.RedisOptions{Name: "A2", ReplicaOf: repl.Listen})
	l := addLink(t, n, 1, "A", primary.Addr)
	tg := &Target{
		Redis:    map[string]*env.Redis{"A": primary},
		Replicas: map[string]*env.Redis{"A": replica},
		Network:  n,
	}
	waitReplicated(t, primary, replica, "synced")
	ctx := ctxT(t, 15*time.Second)

	for _, s := range bothStreams {
		if err := repl.AddToxic("lag-"+s, "timeout", s, map[string]any{"timeout": 0}); err != nil {
			t.Fatal(err)
		}
	}
	c1 := newClient(l.Listen, 2*time.Second)
	defer c1.Close()
	if ok, err := c1.SetNX(ctx, "lock", "client1", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("client 1 SET NX on the primary: %v %v", ok, err)
	}
	f := &Failover{Node: "A", Replica: "A2"}
	inject(t, f, tg)
	if primary.Running() {
		t.Fatal("the old primary still runs")
	}
	if v, err := replica.Client().Get(ctx, "lock").Result(); err != redis.Nil {
		t.Fatalf("lock key on the promoted replica: %q, %v; want missing", v, err)
	}
	if v, _ := replica.Client().Get(ctx, "synced").Result(); v != "1" {
		t.Fatalf("the replicated key is missing too (%q): the replica lost more than the window", v)
	}
	info, _ := replica.Client().Info(ctx, "replication").Result()
	if !strings.Contains(info, "role:master") {
		t.Fatalf("replica not promoted:\n%s", info)
	}
	// Client 1's link to "A" now leads to the new primary, which takes
	// the lock for client 2.
	if l.Upstream != replica.Addr {
		t.Fatalf("link c1-A upstream %s, want %s", l.Upstream, replica.Addr)
	}
	if ok, err := c1.SetNX(ctx, "lock", "client2", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("SET NX on the promoted replica through c1-A: %v %v; want it taken", ok, err)
	}
	if v, _ := replica.Client().Get(ctx, "lock").Result(); v != "client2" {
		t.Fatalf("promoted replica holds %q", v)
	}
	heal(t, f, tg)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := primary.Client().Get(ctx, "lock").Result()
		if v == "client2" {
			break
		}
		if time.Now().After(deadline) {
			info, _ := primary.Client().Info(ctx, "replication").Result()
			t.Fatalf("after heal the old primary does not replicate the new one:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
