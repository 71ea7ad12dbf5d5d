package backends

import (
	"testing"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
)

// Every registered lock names a registered backend, and every backend
// has at least one lock, and a default image or none at all.
func TestEveryLockHasItsBackend(t *testing.T) {
	locks := map[clients.Backend]int{}
	for _, n := range clients.Names() {
		spec, _ := clients.Lookup(n)
		if Of(spec) == nil {
			t.Errorf("lock %s: backend %q is not registered", n, spec.Backend)
		}
		locks[spec.Backend]++
	}
	for _, b := range All() {
		if locks[b.Name()] == 0 {
			t.Errorf("backend %s: no lock runs on it", b.Name())
		}
		// A default image and its flag's help, or neither: a backend
		// that runs on the local host only (the docker host refuses it).
		if def, doc := b.Image(); (def == "") != (doc == "") {
			t.Errorf("backend %s: Image() = %q, %q: want a default image and its flag's help, or neither", b.Name(), def, doc)
		}
	}
}

// A lock's default nodes: its registration's, else one, for a backend
// that counts nodes; none for PostgreSQL.
func TestDefaultNodes(t *testing.T) {
	for lock, want := range map[string]int{"redis": 1, "redlock": 5, "redsync": 5, "rueidislock": 1, "etcd": 1, "postgres-session": 0} {
		spec, err := clients.Lookup(lock)
		if err != nil {
			t.Fatal(err)
		}
		if got := DefaultNodes(spec); got != want {
			t.Errorf("DefaultNodes(%s) = %d, want %d", lock, got, want)
		}
	}
}

// memcached runs one server: more nodes, or a fence from Redis, are
// refused with the field named.
func TestMemcachedCheck(t *testing.T) {
	b, ok := Lookup(clients.MemcachedBackend)
	if !ok {
		t.Fatal("memcached is not registered")
	}
	if err := b.Check(Options{Nodes: 1}); err != nil {
		t.Errorf("one node: %v", err)
	}
	if err := b.Check(Options{Nodes: 3}); err == nil || err.Field != "nodes" {
		t.Errorf("three nodes: %v, want a nodes error", err)
	}
	if err := b.Check(Options{Nodes: 1, Fence: "redis-incr"}); err == nil || err.Field != "fence" {
		t.Errorf("a Redis fence: %v, want a fence error", err)
	}
}

// TestZooKeeperMinTTL holds every ZooKeeper lock's shortest lease to the
// shortest session the ensemble env starts grants, as the tick makes it.
func TestZooKeeperMinTTL(t *testing.T) {
	want := env.ZooKeeperMinSessionTicks * env.DefaultZooKeeperTick
	if clients.ZooKeeperMinTTL != want {
		t.Fatalf("clients.ZooKeeperMinTTL is %v; the ensemble grants sessions of %v at least", clients.ZooKeeperMinTTL, want)
	}
	n := 0
	for _, name := range clients.Names() {
		spec, _ := clients.Lookup(name)
		if spec.Backend != clients.ZooKeeperBackend {
			continue
		}
		n++
		if spec.MinTTL != want {
			t.Errorf("%s: MinTTL %v, want %v (%d ticks of %v)", name, spec.MinTTL, want, env.ZooKeeperMinSessionTicks, env.DefaultZooKeeperTick)
		}
	}
	if n == 0 {
		t.Fatal("no lock on the zookeeper backend")
	}
}
