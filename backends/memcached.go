package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// memcachedBackend is one memcached server, node A: a fault pauses it,
// crashes and restarts it (every key lost: memcached keeps nothing on
// disk), drifts its clock, and cuts or slows a client's link to it.
// Local processes only: no image of it is built.
type memcachedBackend struct{}

func init() { Register(memcachedBackend{}) }

func (memcachedBackend) Name() clients.Backend { return clients.MemcachedBackend }

func (memcachedBackend) Nodes(spec clients.Spec) int { return clustered(spec) }

// Check refuses more than one server (a memcached lock runs on one) and
// a Redis fence.
func (memcachedBackend) Check(o Options) *FieldError {
	if o.Nodes > 1 {
		return &FieldError{"nodes", fmt.Sprintf("%d: a memcached lock runs on one memcached server", o.Nodes)}
	}
	if clients.FenceBackend(o.Fence) == clients.RedisBackend {
		return &FieldError{"fence", fmt.Sprintf("%s counts on Redis nodes, and this story's lock server is memcached", o.Fence)}
	}
	return nil
}

// Settings: its server takes none.
func (memcachedBackend) Settings() Settings { return NoSettings{} }

// NodeClockless is "": memcached runs under the clock shim. It times
// expiry on CLOCK_MONOTONIC, so a drift moves it and a jump does not
// (env.Memcached's doc).
func (memcachedBackend) NodeClockless() string { return "" }

func (memcachedBackend) Shape(nodes int, ttl time.Duration) (string, string) {
	return "1 memcached server", fmt.Sprintf("expiry %ds (memcached's whole seconds)", clients.MemcachedExpiry(ttl))
}

// Image: none; the docker host refuses memcached's stories.
func (memcachedBackend) Image() (string, string) { return "", "" }

func (memcachedBackend) Start(ctx context.Context, o Options) (Servers, error) {
	m, err := env.StartMemcached(ctx, NodeName(0), o.Dir)
	if err != nil {
		return nil, err
	}
	return &memcachedServers{m}, nil
}

// memcachedServers are a run's memcached server.
type memcachedServers struct{ *env.Memcached }

func (s *memcachedServers) Target(t *nemesis.Target) { t.Servers[s.Name] = s.Memcached }

func (s *memcachedServers) Connect(cfg *clients.Config, link Link) error {
	addr, err := link(s.Name, s.Addr)
	if err != nil {
		return err
	}
	cfg.AddServer(clients.MemcachedBackend, clients.Node{Name: s.Name, Addr: addr})
	return nil
}

func (s *memcachedServers) Describe() string {
	return fmt.Sprintf("memcached %s(1 server)", versioned(env.MemcachedVersion()))
}

func (s *memcachedServers) Close() { s.Memcached.Close() }
