// Package backends holds the lock backends, one file each, behind one
// interface: what servers a family of locks runs on, how to start them
// (as local processes or in containers), what of them a fault may touch,
// how a client reaches them, and how they stop. Each file registers its
// backend by the name its locks give (clients.Spec.Backend); the loader,
// the runner, the CLI and the reports find it here.
//
// A new backend is three files: its server in env (starting, stopping,
// crashing and pausing one), its file here, and its locks' file in
// clients (which declares its name). docs/extending.md walks through it.
package backends

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// Backend is a lock backend: the servers its locks run on.
type Backend interface {
	// Name is its registered name, as its locks name it.
	Name() clients.Backend
	// Nodes is how many servers a scenario of the lock spec starts when
	// its nodes field does not say; 0 when the nodes field does not count
	// this backend's servers (PostgreSQL: one server).
	Nodes(spec clients.Spec) int
	// Check refuses the scenario's conditions its servers cannot honour
	// (a fence source, a number of nodes), naming the field (nil: it
	// honours them).
	Check(o Options) *FieldError
	// Settings is the zero value of its own settings struct, which a
	// story's settings for its servers decode into (settings.go).
	Settings() Settings
	// NodeClockless says why no clock fault reaches its nodes, as a
	// step's error says it; "" when the clock shim moves their clocks.
	NodeClockless() string
	// Shape says, in the lock's own terms, what a scenario with nodes
	// runs on and what a lease of ttl lasts (sim explain): "3 Redis
	// node(s)" and "TTL 10s".
	Shape(nodes int, ttl time.Duration) (servers, lease string)
	// Image is the container image its servers run in on the docker host
	// unless one is named (built by make docker), and what a named one
	// needs, for the --NAME-image flag ("Redis `IMAGE`: ...").
	Image() (def, doc string)
	// Start starts its servers, as local processes or, with o.Image, in
	// containers of it, and waits until they answer.
	Start(ctx context.Context, o Options) (Servers, error)
}

// Servers are one run's servers of a backend, started.
type Servers interface {
	// Target adds them to what the run's faults may touch (nodes by the
	// names steps give them).
	Target(t *nemesis.Target)
	// Connect gives a client's config its way to them: link adds the
	// client's proxy to one server and returns the address it dials.
	Connect(cfg *clients.Config, link Link) error
	// Describe says what runs, for the run's environment line ("3 Redis
	// node(s)").
	Describe() string
	// Reset readies them for a generator's next trial: nothing left of
	// the last one's locks or clock faults.
	Reset(ctx context.Context) error
	// Close stops them and removes what they wrote.
	Close()
}

// Link adds a client's proxy to the server at addr, named node as a link
// fault names it (a node's letter, nemesis.PGNode), and returns the
// address the client dials: the proxy's, or the server's own when the run
// goes direct (a generator whose faults need no network).
type Link func(node, addr string) (string, error)

// Options say how to start a backend's servers: the scenario's settings
// for them (scenarios.Conditions.ServerOptions), and where they run.
type Options struct {
	// Nodes is how many servers (the scenario's nodes), for a backend
	// that counts them.
	Nodes int
	// Clients is how many clients will connect.
	Clients int
	// Fence is the scenario's fencing-token source (postgres, redis-incr,
	// redlock-incr).
	Fence string
	// Settings are the story's settings for its lock's servers, of the
	// type its backend's Settings gives (SettingsOf).
	Settings Settings

	// Dir holds the servers' files (the run's temp dir).
	Dir string
	// Image, when set, runs the servers in containers of it (the docker
	// host); empty: local processes.
	Image string
	// Version is the version of its local servers to run, for a backend
	// whose servers come in several (Versioned); "": its default.
	Version string
	// Images are, on the docker host, the images of the other backends
	// whose servers it starts among its own (Includes: Sentinel's Redis
	// primary and replica run in the Redis backend's image).
	Images map[clients.Backend]string
	// Network holds the run's proxies: a server that reaches another
	// through one (a Redis replica its primary) adds its link here.
	Network *env.Network
}

// Versioned is a backend whose local servers come in more than one
// version (sim's --server-version).
type Versioned interface {
	// Version is the version its local servers run when want is asked
	// for ("": its default), or an error naming the versions to be had.
	Version(want string) (string, error)
	// Versions lists the versions to be had here, its default first.
	Versions() []string
}

// ClockVersioned is a Versioned backend whose versions differ in whether
// a clock fault reaches their local servers (etcd: Debian's reads the
// clock out of the shim's reach; locksim's builds carry its clock hook).
// A story that puts a clock fault on one of its servers runs on a version
// that one reaches (runner: the newest, when none is asked).
type ClockVersioned interface {
	Versioned
	// ClocklessIn says why no clock fault reaches its local servers of
	// version v ("": the default); "" when one does.
	ClocklessIn(v string) string
	// ClockedVersion is the newest version here that a clock fault
	// reaches, or an error that says how to get one.
	ClockedVersion() (string, error)
}

// DefaultClockless says why no clock fault reaches b's servers as a run
// that names no version starts them ("": one does). A hunt or a
// generator draws its faults by it: a story it draws plays on the
// default servers, so it moves no clock that they would not feel.
func DefaultClockless(b Backend) string {
	if cv, ok := b.(ClockVersioned); ok {
		return cv.ClocklessIn("")
	}
	return b.NodeClockless()
}

// includer is a backend whose servers include another backend's.
type includer interface {
	// Includes names the backends whose servers it starts among its own
	// (Sentinel: Redis's): on the docker host they run in those backends'
	// images, which the host checks before the run as it checks b's.
	Includes() []clients.Backend
}

// Includes names the backends whose servers b starts among its own (none
// for most).
func Includes(b Backend) []clients.Backend {
	if i, ok := b.(includer); ok {
		return i.Includes()
	}
	return nil
}

// FieldError names the scenario field a backend refuses.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

var registry = map[clients.Backend]Backend{}

// Register adds a backend; a second one of the same name panics.
func Register(b Backend) {
	if _, dup := registry[b.Name()]; dup {
		panic(fmt.Sprintf("backends: backend %q registered twice", b.Name()))
	}
	registry[b.Name()] = b
}

// Lookup finds a backend by name.
func Lookup(name clients.Backend) (Backend, bool) {
	b, ok := registry[name]
	return b, ok
}

// Of is the backend of a lock, nil if none is registered by the name it
// gives (the loader refuses such a lock: TestEveryLockHasItsBackend).
func Of(spec clients.Spec) Backend {
	return registry[spec.Backend]
}

// DefaultNodes is how many servers a scenario of the lock starts when its
// nodes field does not say: its backend's Nodes (0 with no backend).
func DefaultNodes(spec clients.Spec) int {
	if b := Of(spec); b != nil {
		return b.Nodes(spec)
	}
	return 0
}

// All lists the backends by name.
func All() []Backend {
	out := make([]Backend, 0, len(registry))
	for _, b := range registry {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// connectEach gives a client's config its way to each of servers, the
// nodes of backend b: a link to the server's address, named as the node
// (nameAddr gives both), in cfg.Servers[b].
func connectEach[S any](cfg *clients.Config, link Link, b clients.Backend, servers []S, nameAddr func(S) (string, string)) error {
	for _, s := range servers {
		name, upstream := nameAddr(s)
		addr, err := link(name, upstream)
		if err != nil {
			return err
		}
		cfg.AddServer(b, clients.Node{Name: name, Addr: addr})
	}
	return nil
}

// NodeName names a scenario's node i (from 0): A, B, C...
func NodeName(i int) string { return string(rune('A' + i)) }

// clustered is the Nodes of a backend whose nodes field counts its
// servers: what the lock's registration says, else one.
func clustered(spec clients.Spec) int { return max(spec.Nodes, 1) }

// startEach starts n servers at once, calling start(i) for each, and
// returns their errors joined.
func startEach(n int, start func(i int) error) error {
	errs := make([]error, n)
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			errs[i] = start(i)
			done <- struct{}{}
		}()
	}
	for i := 0; i < n; i++ {
		<-done
	}
	return errors.Join(errs...)
}

// closeEach runs close for each of n servers at once and waits for all.
func closeEach(n int, close func(i int)) {
	_ = startEach(n, func(i int) error { close(i); return nil })
}
