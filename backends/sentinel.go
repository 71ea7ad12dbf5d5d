package backends

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// sentinelBackend is one Redis primary, node A, with an asynchronous
// replica that replicates through its own proxy (so a story can hold
// replication back), watched by three real redis-sentinel processes
// (quorum 2): when A stops answering for down-after-milliseconds, they
// elect one of themselves to promote the replica, and the lock's clients
// follow. redis-failover is the same story with the harness promoting the
// replica itself.
type sentinelBackend struct{}

func init() { Register(sentinelBackend{}) }

func (sentinelBackend) Name() clients.Backend { return clients.SentinelBackend }

func (sentinelBackend) Nodes(clients.Spec) int { return 1 }

// Check refuses more than the one primary the sentinels watch.
func (sentinelBackend) Check(o Options) *FieldError {
	if o.Nodes > 1 {
		return &FieldError{"nodes", fmt.Sprintf("Sentinel here watches one primary (A) and its replica, got nodes: %d", o.Nodes)}
	}
	return nil
}

// Settings are the Redis nodes': the primary and its replica are Redis
// servers (it has its replica whatever replicas says).
func (sentinelBackend) Settings() Settings { return RedisSettings{} }

func (sentinelBackend) NodeClockless() string { return "" }

func (sentinelBackend) Shape(_ int, ttl time.Duration) (string, string) {
	return "a Redis primary (A), its replica and 3 sentinels (quorum 2)", fmt.Sprintf("TTL %v", ttl)
}

// Image is the sentinels' image; the primary and its replica run in the
// Redis backend's (Includes), as a Redis story's servers do.
func (sentinelBackend) Image() (string, string) {
	return env.DefaultSentinelImage, "Sentinel `IMAGE` for the sentinels (the primary and replica run in --redis-image): redis-sentinel, or a redis-server to run with --sentinel, on its PATH"
}

// Includes: the primary and its replica are the Redis backend's servers.
func (sentinelBackend) Includes() []clients.Backend { return []clients.Backend{clients.RedisBackend} }

func (sentinelBackend) Start(ctx context.Context, o Options) (Servers, error) {
	ro := o
	set := SettingsOf[RedisSettings](o)
	set.Replicas = true
	ro.Nodes, ro.Settings = 1, set
	ro.Image = ""
	if o.Image != "" { // the docker host: the Redis servers in the Redis image
		if ro.Image = o.Images[clients.RedisBackend]; ro.Image == "" {
			return nil, errors.New("start sentinel: no Redis image for the primary and its replica")
		}
	}
	rs, err := redisBackend{}.Start(ctx, ro)
	if err != nil {
		return nil, err
	}
	r := rs.(*redisServers)
	sn, err := env.StartSentinel(ctx, env.SentinelOptions{Primary: r.nodes[0].Addr, MasterName: clients.SentinelMaster,
		Replicas: 1, Dir: o.Dir, Image: o.Image})
	if err != nil {
		r.Close()
		return nil, err
	}
	return &sentinelServers{redisServers: r, sentinel: sn}, nil
}

// sentinelServers are a run's primary, replica and sentinels.
type sentinelServers struct {
	*redisServers
	sentinel *env.Sentinel
}

// Target: the primary is node A, its replica A's replica; the
// sentinels are not a fault's to touch.
func (s *sentinelServers) Target(t *nemesis.Target) { s.redisServers.Target(t) }

// Connect gives the client its proxies to the sentinels and to both
// Redis servers, each named with its own address, which is how the
// sentinels name the primary.
func (s *sentinelServers) Connect(cfg *clients.Config, link Link) error {
	for _, n := range s.sentinel.Nodes {
		addr, err := link("S"+n.Name, n.Addr)
		if err != nil {
			return err
		}
		cfg.AddServer(clients.SentinelBackend, clients.Node{Name: "S" + n.Name, Addr: addr})
	}
	for _, r := range append(append([]*env.Redis{}, s.nodes...), s.replicas...) {
		addr, err := link(r.Name, r.Addr)
		if err != nil {
			return err
		}
		cfg.AddServer(clients.RedisBackend, clients.Node{Name: r.Name, Addr: addr, Upstream: r.Addr})
	}
	return nil
}

func (s *sentinelServers) Describe() string {
	return fmt.Sprintf("a Redis %sprimary (A), its replica and %d sentinels (quorum 2, down after %v)", versioned(env.RedisVersion()), len(s.sentinel.Nodes), env.DefaultSentinelDownAfter)
}

// Reset is not offered: a generator's trials would need the primary put
// back after a failover.
func (s *sentinelServers) Reset(context.Context) error {
	return errors.New("Sentinel stories are scripted: no generator trials")
}

func (s *sentinelServers) Close() {
	s.sentinel.Close()
	s.redisServers.Close()
}
