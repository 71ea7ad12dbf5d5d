package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/locksim/locksim/promise"
)

// Backend names a lock backend: the servers a lock runs on. Each is
// declared beside its locks (RedisBackend in redlock.go, PostgresBackend
// in postgres.go, EtcdBackend in etcd.go) and registered, with how to
// start its servers, in package backends.
type Backend string

// Node is one lock server as one client reaches it (through its own proxy).
type Node struct {
	// Name is the node's letter in the story: A, B, C...
	Name string `json:"name"`
	// Addr is host:port of this client's proxy to the node.
	Addr string `json:"addr"`
	// Upstream is the node's own host:port, which the proxy forwards to,
	// when a lock is told it by others (Sentinel names the primary by its
	// own address): the lock dials Addr for it. Empty when no one does.
	Upstream string `json:"upstream,omitempty"`
}

// Config is what a lock implementation needs to connect.
type Config struct {
	// Servers lists, by backend, the servers this client reaches, in
	// story order (A, B, C...): Servers[RedisBackend] the Redis nodes (one
	// for single-node locks; for redis-sentinel the primary and its
	// replica), Servers[EtcdBackend] the etcd members,
	// Servers[ZooKeeperBackend] the ZooKeeper members and
	// Servers[SentinelBackend] the Redis sentinels. In
	// JSON each backend's list is a field of its own, named as the backend
	// ("redis": [...]), as worker protocol v1 has them.
	Servers map[Backend][]Node `json:"-"`
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

// AddServer adds a server of backend b to the ones c reaches, after them.
func (c *Config) AddServer(b Backend, n Node) {
	if c.Servers == nil {
		c.Servers = map[Backend][]Node{}
	}
	c.Servers[b] = append(c.Servers[b], n)
}

// configFields are Config's own JSON fields: Config without its methods.
type configFields Config

// MarshalJSON writes each backend's servers as a field of its own, ahead
// of the other fields: {"redis":[...],"node_timeout":...}.
func (c Config) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	names := make([]string, 0, len(c.Servers))
	for b, nodes := range c.Servers {
		if len(nodes) > 0 {
			names = append(names, string(b))
		}
	}
	sort.Strings(names)
	for _, b := range names {
		k, _ := json.Marshal(b)
		v, err := json.Marshal(c.Servers[Backend(b)])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
		buf.WriteByte(',')
	}
	rest, err := json.Marshal(configFields(c))
	if err != nil {
		return nil, err
	}
	if len(rest) == 2 { // {}
		buf.Truncate(max(buf.Len()-1, 1))
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	buf.Write(rest[1:])
	return buf.Bytes(), nil
}

// UnmarshalJSON reads Config's own fields, and every other field as the
// servers of the backend it names.
func (c *Config) UnmarshalJSON(b []byte) error {
	var f configFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	own := configFieldNames()
	for k, v := range fields {
		if own[k] {
			continue
		}
		var nodes []Node
		if err := json.Unmarshal(v, &nodes); err != nil {
			return fmt.Errorf("config.%s: a backend's servers: %v", k, err)
		}
		if f.Servers == nil {
			f.Servers = map[Backend][]Node{}
		}
		f.Servers[Backend(k)] = nodes
	}
	*c = Config(f)
	return nil
}

// configFieldNames are the JSON names of Config's own fields.
func configFieldNames() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(configFields{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// Timeout returns NodeTimeout or its default.
func (c Config) Timeout() time.Duration {
	if c.NodeTimeout > 0 {
		return c.NodeTimeout
	}
	return DefaultNodeTimeout
}

// DefaultNodeTimeout bounds each request to one node when the config
// does not say (a scenario's node_timeout).
const DefaultNodeTimeout = 200 * time.Millisecond

// Constructor builds a lock from a config.
type Constructor func(cfg Config) (Lock, error)

// Spec describes a registered lock algorithm.
type Spec struct {
	// Name is how scenarios name it ("redlock", "redis", "postgres-session").
	Name string
	// Doc is one line for `sim locks`.
	Doc string
	// Backend is the servers it needs (RedisBackend, PostgresBackend,
	// EtcdBackend).
	Backend Backend
	// New builds one client.
	New Constructor
	// Nodes is how many Redis servers a scenario starts for this lock
	// when it does not say (0: one for a redis backend).
	Nodes int
	// Fences says that the lock's own leases carry a fencing token (etcd's
	// revision), so a scenario can claim a grant's token with no fence
	// source of its own.
	Fences bool
	// NoExpiry says that its leases do not expire by a TTL but last as
	// long as the client's session (an advisory lock's connection, an
	// etcd session kept alive), and say so (Validity 0).
	NoExpiry bool
	// MinTTL is the shortest lease the lock's servers grant (0: any): a
	// shorter TTL is rounded up to it (etcd's whole seconds), so a sweep
	// or a hunt relative to the TTL would measure another lease than the
	// one it names, and they refuse it.
	MinTTL time.Duration
	// LocalExtend says that Extend sends nothing: it only checks what the
	// client already knows (an advisory lock's, which has no TTL to push).
	LocalExtend bool
	// PlainExpire says that the lock can renew a key with a plain
	// PEXPIRE, whoever holds it (worker.PlainExpirer): the naive watchdog
	// a story asks for with watchdog: pexpire. A lock without it cannot
	// tell such a story (scenarios.WithLock says so).
	PlainExpire bool
	// Waits says that the lock is a Waiter: a story's acquire can wait
	// for it (wait:). A lock without it cannot tell such a story.
	Waits bool
	// OneLock, when set, says why the lock takes one and the same lock
	// whatever key it is asked for (goose's fixed advisory key): a story
	// that locks two keys cannot be told with it.
	OneLock string
	// Mutant, when set, names the defence this lock deliberately breaks:
	// it exists so that a scenario can prove it catches the breakage, and
	// `sim locks` lists it only when asked.
	Mutant string
	// MutantOf names the lock a mutant is a copy of, but for the defence
	// it breaks: its reference, which a story of the mutant is played
	// with when a user's lock replaces it (scenarios.ReferenceLock).
	MutantOf string
	// Like names the lock this one stands in for: a library's lock, or a
	// variant, that does what Like does (redislock, like redis). It is
	// judged against Like on every story it plays, whatever lock the
	// story was told with (scenarios.ReferenceFor). Empty: it stands in
	// for no other.
	Like string
	// Promises are the properties the lock promises its users, each in
	// the words of its library's docs (or, for locksim's references, of
	// the published pattern it follows) with the address that says so.
	// sim findings counts a story against the lock only where it promises
	// what the story tests (scenarios.Scenario.Tests).
	Promises promise.Set
	// OwnWatchdog, when set, says how the lock renews its leases by
	// itself while they are held (rueidislock's ExtendInterval): a lock
	// with a watchdog of its own is judged against its Like played with a
	// token watchdog (scenarios.Changes.Watchdog), in sim findings' cells
	// and a hunt's baseline alike, so that what it does worse is not the
	// renewal its reference lacks.
	OwnWatchdog string
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
		return Spec{}, fmt.Errorf("unknown lock %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Registered is the spec of a lock known to be registered: a name from
// Names, or one a Lookup (the scenario loader's, a flag's check) already
// accepted. Any other name is a bug in the caller, and it panics.
func Registered(name string) Spec {
	s, ok := registry[name]
	if !ok {
		panic(fmt.Sprintf("clients.Registered(%q): not a registered lock; the caller should have checked it with Lookup", name))
	}
	return s
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
