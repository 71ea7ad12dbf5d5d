package backends

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// etcdBackend is an etcd cluster whose members are the scenario's nodes,
// A, B, C...: a fault pauses, crashes and restarts a member as it does a
// Redis node.
type etcdBackend struct{}

func init() { Register(etcdBackend{}) }

func (etcdBackend) Name() clients.Backend { return clients.EtcdBackend }

func (etcdBackend) Nodes(spec clients.Spec) int { return clustered(spec) }

// Check refuses a Redis fence: an etcd cluster has no Redis nodes.
func (etcdBackend) Check(o Options) *FieldError {
	if clients.FenceBackend(o.Fence) == clients.RedisBackend {
		return &FieldError{"fence", fmt.Sprintf("%s counts on Redis nodes; the etcd lock hands out its key's revision as its fencing token", o.Fence)}
	}
	return nil
}

// Settings: its servers take none (a Redis node's persistence and
// replicas are refused).
func (etcdBackend) Settings() Settings { return NoSettings{} }

// NodeClockless is "": a clock fault reaches the members of the etcd
// builds of make test-deps, which carry locksim's clock hook in their Go
// runtime (env.EtcdClockHook), and a story with one plays on such a
// build (ClockedVersion). Debian's etcd, the default, takes none
// (ClocklessIn); a hunt or generator, which draws its faults without
// knowing the version, draws none on a member (DefaultClockless).
func (etcdBackend) NodeClockless() string { return "" }

// ClocklessIn says why no clock fault reaches etcd version v's members
// (env.EtcdClockless): Debian's etcd, the default, reads the clock
// through the vDSO, out of the clock shim's reach.
func (etcdBackend) ClocklessIn(v string) string {
	bin, err := env.EtcdBinary(v)
	if err != nil {
		return err.Error()
	}
	return env.EtcdClockless(bin)
}

// ClockedVersion is the newest etcd build here with the clock hook.
func (b etcdBackend) ClockedVersion() (string, error) {
	for i := len(env.EtcdBuilds) - 1; i >= 0; i-- {
		v := env.EtcdBuilds[i]
		if b.ClocklessIn(v) == "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("no etcd here takes a clock fault: Debian's reads the clock out of the clock shim's reach, and make test-deps builds etcd %s with locksim's clock hook", strings.Join(env.EtcdBuilds, " and "))
}

func (etcdBackend) Shape(nodes int, ttl time.Duration) (string, string) {
	return fmt.Sprintf("%d etcd member(s)", nodes), fmt.Sprintf("session lease TTL %v", ttl)
}

func (etcdBackend) Image() (string, string) {
	return env.DefaultEtcdImage, "etcd `IMAGE`, etcd on its PATH"
}

// Version: Debian's etcd-server by default, or one make test-deps built
// from the Go module proxy (env.EtcdBinary).
func (etcdBackend) Version(want string) (string, error) {
	bin, err := env.EtcdBinary(want)
	if err != nil {
		return "", err
	}
	return env.EtcdVersion(bin)
}

func (etcdBackend) Versions() []string { return env.EtcdVersions() }

func (etcdBackend) Start(ctx context.Context, o Options) (Servers, error) {
	e, err := env.StartEtcd(ctx, env.EtcdOptions{Members: o.Nodes, Image: o.Image, Version: o.Version})
	if err != nil {
		return nil, err
	}
	return &etcdServers{e}, nil
}

// etcdServers are a run's etcd cluster.
type etcdServers struct{ *env.Etcd }

func (s *etcdServers) Target(t *nemesis.Target) {
	for _, m := range s.Members {
		t.Servers[m.Name] = m
	}
}

func (s *etcdServers) Connect(cfg *clients.Config, link Link) error {
	return connectEach(cfg, link, clients.EtcdBackend, s.Members, func(m *env.EtcdMember) (string, string) { return m.Name, m.Addr })
}

func (s *etcdServers) Describe() string {
	if s.Version == "" { // in containers: the image's etcd
		return fmt.Sprintf("etcd (%d member(s))", len(s.Members))
	}
	return fmt.Sprintf("etcd %s (%d member(s))", s.Version, len(s.Members))
}

// Reset does nothing: a trial's leases end with its clients' releases
// and their sessions.
func (s *etcdServers) Reset(context.Context) error { return nil }
