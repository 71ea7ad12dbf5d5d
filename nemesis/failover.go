package nemesis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/locksim/locksim/env"

	"github.com/locksim/locksim/history"
)

// Failover does what Sentinel or an operator does when a Redis primary
// dies: it kills the primary Node with SIGKILL, promotes its asynchronous
// replica (Target.Replicas[Node]) with REPLICAOF NO ONE, and points every
// link of this run that led to the primary at the promoted replica
// (env.Link.Retarget: clients' connections are reset and reconnect to the
// new primary under the same node name). Any write the primary had
// acknowledged but not yet sent to the replica is gone: a lock key among
// them lets a second client take a lock the first still holds.
// Replica, if set, must name that replica (a check, for scenarios).
//
// Not reversible: the lost writes stay lost and the links stay on the new
// primary. Heal restarts the old primary (same port and options) as a
// replica of the new one, as Sentinel does when it comes back, so that
// every server of the run is running again. Other faults that name Node
// still reach the old server, Target.Redis[Node], now a replica.
type Failover struct {
	Node    string
	Replica string
	guard
}

func (f *Failover) On() string { return f.Node }
func (f *Failover) Detail() string {
	if f.Replica != "" {
		return "kill -9, promote " + f.Replica
	}
	return "kill -9, promote its replica"
}

func (f *Failover) Inject(ctx context.Context, t *Target) error {
	primary, err := t.redis(f.Node)
	if err != nil {
		return err
	}
	replica, ok := t.Replicas[f.Node]
	if !ok || replica == nil {
		return fmt.Errorf("failover: node %q has no replica in this run", f.Node)
	}
	if f.Replica != "" && f.Replica != replica.Name {
		return fmt.Errorf("failover: the replica of %q in this run is %q, not %q", f.Node, replica.Name, f.Replica)
	}
	var links []*env.Link
	if t.Network != nil {
		for _, l := range t.Network.Links() {
			if l.Upstream == primary.Addr {
				links = append(links, l)
			}
		}
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		if !primary.Running() {
			return fmt.Errorf("failover: primary %s is not running", f.Node)
		}
		if !replica.Running() {
			return fmt.Errorf("failover: replica %s is not running", replica.Name)
		}
		primary.Crash()
		// From here on the failover has happened, whatever fails next:
		// Heal must bring the old primary back.
		add(func(ctx context.Context) error { return rejoin(ctx, primary, replica) })
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := replica.Client().Do(pctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			return fmt.Errorf("failover: REPLICAOF NO ONE on %s: %w", replica.Name, err)
		}
		var errs []string
		for _, l := range links {
			if err := l.Retarget(replica.Addr); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("failover: %s", strings.Join(errs, "; "))
		}
		return nil
	})
}

// rejoin restarts the old primary, if it is down, as a replica of the new
// one.
func rejoin(ctx context.Context, old, promoted *env.Redis) error {
	if !old.Running() {
		if err := old.Restart(ctx); err != nil {
			return fmt.Errorf("failover: restart old primary %s: %w", old.Name, err)
		}
	}
	host, port, _ := net.SplitHostPort(promoted.Addr)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := old.Client().Do(rctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("failover: REPLICAOF on old primary %s: %w", old.Name, err)
	}
	return nil
}

func (f *Failover) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

func init() {
	Register(Spec[OneNode]{Name: "failover", Doc: "kill -9 the node and promote its replica; clients are moved over",
		Realistic: "any time: a primary lost before its asynchronous replica has its writes (Redis documentation, \"Redis replication\", https://redis.io/docs/latest/operate/oss_and_stack/management/replication/)",
		Needs:     []string{"node"}, Check: func(_ *OneNode, f Facts) *ParamError { return needsReplicas("failover", f) },
		New:    func(p *OneNode) Breaker { return &Failover{Node: p.Node} },
		Effect: history.EffectDown, Shape: Shape{Replicas: true}, Available: redisReplicas, Place: onNode,
		Lasting: "the replica it promoted stays the primary, and the clients' links lead to it"})
}

func (f *Failover) Fields() history.FaultFields {
	return history.FaultFields{Node: f.Node}
}
