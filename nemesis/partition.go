package nemesis

import (
	"context"
	"fmt"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"

	"github.com/locksim/locksim/history"
)

// Partition cuts one client off from some nodes: every byte on those links
// is dropped in both directions and no close gets through, as in a real
// partition, so the client's requests time out, and a connection the client
// gives up on (or dies with) stays open on the server until the partition
// heals (env.PartitionToxic). The client's links to the
// other nodes are untouched. Nodes may include PGNode, the client's link
// to PostgreSQL: a session behind a silent partition keeps its advisory
// locks (the server sees no close). Heal lets bytes through again.
type Partition struct {
	Client int
	Nodes  []string
	guard
}

const partitionToxic = "partition"

func (f *Partition) On() string     { return linksOn(f.Client, f.Nodes) }
func (f *Partition) Detail() string { return "packets dropped both ways" }

func (f *Partition) Inject(ctx context.Context, t *Target) error {
	links, err := t.links(f.Client, f.Nodes)
	if err != nil {
		return err
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		// Drop data, and keep a client's close from the server.
		return addToxics(links, partitionToxic, env.PartitionToxic, bothStreams, nil, add)
	})
}

func (f *Partition) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

var bothStreams = []string{"upstream", "downstream"}

func init() {
	Register(Spec[ClientLinks]{Name: "partition", Doc: "cut the client's links to the nodes (packets dropped, no reply, no close passed on)",
		Realistic: "any length: a dead link or a firewall dropping packets lasts until someone mends it",
		Needs:     []string{"client", "links"},
		New:       func(p *ClientLinks) Breaker { return &Partition{Client: p.Client, Nodes: p.Links} },
		Effect:    history.EffectNetwork, Shape: Shape{LockLinks: true, Silences: true}, Place: onLinks,
		Available: func(s Setup) string {
			if s.Backend != clients.RedisBackend {
				// Only a Redis-family client bounds every call by its
				// node_timeout: a partition would hold another's until
				// the heal.
				return fmt.Sprintf("a partition would hold the calls of %s's clients until the story's heal; a hunt partitions only Redis nodes' links, which node_timeout bounds", s.Lock)
			}
			return clientLinks(s)
		}})
	Register(Spec[OneNode]{Name: "replication-lag", Doc: "hold back the node's replication link, so writes do not reach its replica",
		Realistic: "any length: an asynchronous replica lags its primary by whatever its link and load allow (Redis documentation, \"Redis replication\", https://redis.io/docs/latest/operate/oss_and_stack/management/replication/)",
		Needs:     []string{"node"}, Check: func(_ *OneNode, f Facts) *ParamError { return needsReplicas("replication-lag", f) },
		New:    func(p *OneNode) Breaker { return &ReplicationLag{Partition{Client: 0, Nodes: []string{p.Node}}} },
		Effect: history.EffectNetwork, Shape: Shape{Replicas: true, Silences: true}, Available: redisReplicas, Place: onNode})
}

// ReplicationLag cuts a node's replication link, the link of "client 0"
// to it, as a partition cuts a client's: writes stop reaching its replica
// until the heal.
type ReplicationLag struct{ Partition }

func (f *Partition) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Links: f.Nodes}
}
