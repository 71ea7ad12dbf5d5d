package clients

import (
	"fmt"
	"sort"
	"time"
)

// Node is one lock server as one client reaches it (through its own proxy).
type Node struct {
	// Name is the node's letter in the story: A, B, C...
	Name string `json:"name"`
	// Addr is host:port of this client's proxy to the node.
	Addr string `json:"addr"`
}

// Config is what a lock implementation needs to connect.
type Config struct {
	// Redis lists the Redis nodes, in order (one for single-node locks).
	Redis []Node `json:"redis,omitempty"`
	// Etcd lists the etcd members (A, B, C...), for the etcd lock.
	Etcd []Node `json:"etcd,omitempty"`
	// Postgres is a pgx connection string for this client's link to
	// PostgreSQL.
	Postgres string `json:"postgres,omitempty"`
	// NodeTimeout bounds each request to one node (Redlock's per-node
	// timeout). Zero means 200ms.
	NodeTimeout time.Duration `json:"node_timeout,omitempty"`
	// ClientID is the client's number in the run (1-based).
	ClientID int `json:"client_id,omitempty"`
	// WallClock is the client's wall clock, for locks that measure their
	// validity by it (nil: time.Now). The worker sets it.
	WallClock func() time.Time `json:"-"`
}

// Timeout returns NodeTimeout or its default.
func (c Config) Timeout() time.Duration {
	if c.NodeTimeout > 0 {
		return c.NodeTimeout
	}
	return 200 * time.Millisecond
}

// Constructor builds a lock from a config.
type Constructor func(cfg Config) (Lock, error)

// Spec describes a registered lock algorithm.
type Spec struct {
	// Name is how scenarios name it ("redlock", "redis", "postgres-session").
	Name string
	// Doc is one line for `sim list` and the README.
	Doc string
	// Backend is "redis", "postgres" or "etcd": what servers it needs.
	Backend string
	// New builds one client.
	New Constructor
	// Nodes is how many Redis servers a scenario starts for this lock
	// when it does not say (0: one for a redis backend).
	Nodes int
	// Fences says that the lock's own leases carry a fencing token (etcd's
	// revision), so a scenario can claim a grant's token with no fence
	// source of its own.
	Fences bool
	// Mutant, when set, names the defence this lock deliberately breaks:
	// it exists so that a scenario can prove it catches the breakage, and
	// `sim locks` lists it only when asked.
	Mutant string
}

var registry = map[string]Spec{}

// Register adds a lock algorithm; a duplicate name panics at start-up.
func Register(s Spec) {
	if _, dup := registry[s.Name]; dup {
		panic("clients: lock " + s.Name + " registered twice")
	}
	registry[s.Name] = s
}

// Lookup finds a lock algorithm by name.
func Lookup(name string) (Spec, error) {
	s, ok := registry[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown lock %q (known: %v)", name, Names())
	}
	return s, nil
}

// Names lists the registered locks, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
