package scenarios

// nodes.go: how many servers a lock runs on when it plays a story. This
// is the one place that works it out: a scenario's default, sim run
// --lock and sim matrix (WithLock), sim sweep --locks, a counterfactual
// that changes the lock, and sim hunt all ask LockNodes.

import (
	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
)

// LockNodes is how many servers of its backend lock runs on when it
// plays sc, or, with sc nil, a story of its own (the scenario loader's
// default, sim hunt's candidates):
//   - its own lock runs on the story's nodes;
//   - a lock of other servers than the story's, or with no story, runs
//     on its backend's default (Redlock and redsync five Redis nodes,
//     one etcd member...);
//   - a single-node lock runs on one node;
//   - a quorum lock runs on the story's nodes when the story has
//     several, else on its own default;
//   - a PostgreSQL lock has no nodes of its own: a story's nodes are then
//     its Redis fencing token's, and stay while the story keeps that fence.
func LockNodes(sc *Scenario, spec clients.Spec) int {
	want := backends.DefaultNodes(spec)
	if sc == nil {
		return want
	}
	own, err := clients.Lookup(sc.Lock)
	switch {
	case spec.Name == sc.Lock:
		return sc.Nodes
	case want == 0:
		if clients.FenceBackend(sc.Fence) == clients.RedisBackend {
			return sc.Nodes
		}
		return 0
	case err != nil || own.Backend != spec.Backend, want == 1, sc.Nodes <= 1:
		return want
	}
	return sc.Nodes
}
