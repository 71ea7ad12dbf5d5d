// Package nemesis holds the faults of the Redlock debate, one file each,
// behind one interface. A fault acts only on what this run started: its
// redis-servers, its PostgreSQL, its toxiproxy links and its client
// processes; anything else is refused.
package nemesis

import (
	"context"
	"fmt"

	"locksim/env"
)

// Target is everything a fault may touch: what this run started.
type Target struct {
	// Redis maps node names (A, B, ...) to this run's servers.
	Redis map[string]*env.Redis
	// Network holds this run's proxies, one per (client, node) link.
	Network *env.Network
	// Clients maps client numbers to their worker processes.
	Clients map[int]*env.Proc
}

// Fault is one injectable, healable fault. Inject and Heal are each called
// once, in that order; the runner heals every injected fault before it
// checks the history, and on every exit path.
type Fault interface {
	// Name is the fault's kind, as scenarios name it ("clock-jump").
	Name() string
	// On says what it hits ("C", "client 1 -> D,E").
	On() string
	// Detail gives its size ("+15s").
	Detail() string
	// Inject breaks the target.
	Inject(ctx context.Context, t *Target) error
	// Heal puts it back.
	Heal(ctx context.Context, t *Target) error
}

// redis finds a node of this run, refusing any other.
func (t *Target) redis(node string) (*env.Redis, error) {
	r, ok := t.Redis[node]
	if !ok {
		return nil, fmt.Errorf("node %q is not a server of this run", node)
	}
	return r, nil
}

// link finds the proxy from client to node, refusing any other.
func (t *Target) link(client int, node string) (*env.Link, error) {
	if t.Network == nil {
		return nil, fmt.Errorf("this run has no network proxies")
	}
	return t.Network.Link(env.LinkName(client, node))
}
