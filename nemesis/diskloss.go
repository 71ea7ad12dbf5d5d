package nemesis

import (
	"context"
	"fmt"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

// DiskLoss takes a node down with its disk: kill -9, then its data dir is
// emptied, as a replaced disk, a rebuilt VM or a lost volume leaves it,
// and it restarts at once. What it kept is gone however it was synced:
// a Redis node comes back empty whatever its persistence (as with none,
// Crash), a ZooKeeper member comes back with only its myid and must learn
// the ensemble's state from its leader before it answers a client, and an
// etcd member, which etcd would not take back under its old identity, is
// replaced as etcd's guide says (removed, added again as a new member,
// started empty: env.EtcdMember.Restart) and learns the cluster's data
// from its leader. The pair shows what a quorum that repairs its members
// buys over independent nodes with the same durability.
type DiskLoss struct {
	Node string
	// crash is the kill and the restart, its kill the disk's loss.
	crash Crash
}

// diskLoser is a server whose data dir the fault can empty: a Redis node,
// a ZooKeeper or an etcd member.
type diskLoser interface {
	Server
	LoseDisk() error
}

func (f *DiskLoss) On() string { return f.Node }

func (f *DiskLoss) Detail() string { return "kill -9, its data dir lost, restart at once" }

func (f *DiskLoss) Inject(ctx context.Context, t *Target) error {
	s, err := t.server(f.Node)
	if err != nil {
		return err
	}
	d, ok := s.(diskLoser)
	if !ok {
		return fmt.Errorf("disk-loss %s: only a Redis node's, a ZooKeeper or an etcd member's data dir can be lost", f.Node)
	}
	f.crash = Crash{Node: f.Node, down: func(Server) error { return d.LoseDisk() }}
	return f.crash.Inject(ctx, t)
}

func (f *DiskLoss) Heal(ctx context.Context, t *Target) error { return f.crash.Heal(ctx, t) }

// Fields are a crash's: the node, down until it restarts.
func (f *DiskLoss) Fields() history.FaultFields { return f.crash.Fields() }

// DiskLossParams are a disk-loss step's fields.
type DiskLossParams struct {
	OneNode `yaml:",inline"`
}

// diskNodes is where disk-loss is available: on Redis nodes, ZooKeeper
// and etcd members.
func diskNodes(s Setup) string {
	if why := lockNodes(s); why != "" {
		return why
	}
	if s.Backend != clients.RedisBackend && s.Backend != clients.ZooKeeperBackend && s.Backend != clients.EtcdBackend {
		return fmt.Sprintf("it empties a Redis node's, a ZooKeeper or an etcd member's data dir, and %s's servers are none of these", s.Lock)
	}
	return ""
}

func init() {
	Register(Spec[DiskLossParams]{Name: "disk-loss",
		Realistic: "any time: a member whose disk is lost is removed and added again (etcd documentation, \"Runtime reconfiguration\", https://etcd.io/docs/v3.4/op-guide/runtime-configuration/, \"Replace a failed machine\")",
		Doc:       "kill -9 a Redis node, a ZooKeeper or an etcd member and empty its data dir (a replaced disk); it restarts at once (an etcd member replaced: removed and added again)",
		Effect:    history.EffectDown, Available: diskNodes,
		Needs: []string{"node"},
		New:   func(p *DiskLossParams) Breaker { return &DiskLoss{Node: p.Node} }})
}
