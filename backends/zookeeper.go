package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// zookeeperBackend is a ZooKeeper ensemble whose members are the
// scenario's nodes, A, B, C...: a fault pauses, crashes and restarts a
// member as it does an etcd member.
type zookeeperBackend struct{}

func init() { Register(zookeeperBackend{}) }

func (zookeeperBackend) Name() clients.Backend { return clients.ZooKeeperBackend }

func (zookeeperBackend) Nodes(spec clients.Spec) int { return clustered(spec) }

// Check refuses a Redis fence: an ensemble has no Redis nodes.
func (zookeeperBackend) Check(o Options) *FieldError {
	if clients.FenceBackend(o.Fence) == clients.RedisBackend {
		return &FieldError{"fence", fmt.Sprintf("%s counts on Redis nodes; the ZooKeeper lock hands out its znode's creation zxid (czxid) as its fencing token", o.Fence)}
	}
	return nil
}

// Settings: its servers take none (a Redis node's persistence and
// replicas are refused).
func (zookeeperBackend) Settings() Settings { return NoSettings{} }

// NodeClockless is "": each local member runs under the clock shim, so a
// clock jump reaches its wall clock (which no session is timed by) and a
// drift its monotonic clock too (env/zookeeper.go's doc). A member of the
// docker backend runs without it, and a clock fault on it is refused when
// injected.
func (zookeeperBackend) NodeClockless() string { return "" }

func (zookeeperBackend) Shape(nodes int, ttl time.Duration) (string, string) {
	return fmt.Sprintf("%d ZooKeeper member(s)", nodes), fmt.Sprintf("session timeout %v", ttl)
}

func (zookeeperBackend) Image() (string, string) {
	return env.DefaultZooKeeperImage, "ZooKeeper `IMAGE`: java on its PATH and Debian's zookeeper package's jars (/usr/share/java/zookeeper.jar and those its manifest names)"
}

func (zookeeperBackend) Start(ctx context.Context, o Options) (Servers, error) {
	z, err := env.StartZooKeeper(ctx, env.ZooKeeperOptions{Members: o.Nodes, Image: o.Image, ClockShim: o.Image == ""})
	if err != nil {
		return nil, err
	}
	return &zookeeperServers{z}, nil
}

// zookeeperServers are a run's ZooKeeper ensemble.
type zookeeperServers struct{ *env.ZooKeeper }

func (s *zookeeperServers) Target(t *nemesis.Target) {
	for _, m := range s.Members {
		t.Servers[m.Name] = m
	}
}

func (s *zookeeperServers) Connect(cfg *clients.Config, link Link) error {
	return connectEach(cfg, link, clients.ZooKeeperBackend, s.Members, func(m *env.ZooKeeperMember) (string, string) { return m.Name, m.Addr })
}

func (s *zookeeperServers) Describe() string {
	return fmt.Sprintf("ZooKeeper %s(%d member(s), tick %v)", versioned(env.ZooKeeperVersion()), len(s.Members), s.TickTime)
}
