// Package nemesis holds the faults of the Redlock debate, one file each,
// behind one interface. A fault acts only on what this run started: its
// redis-servers, its PostgreSQL, its toxiproxy links and its client
// processes; anything else is refused.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/env"

	"github.com/locksim/locksim/history"
)

// Target is everything a fault may touch: what this run started.
type Target struct {
	// Redis maps node names (A, B, ...) to this run's servers.
	Redis map[string]*env.Redis
	// Network holds this run's proxies, one per (client, node) link.
	Network *env.Network
	// Clients maps client numbers (from 1) to their worker processes.
	Clients map[int]*env.Proc
	// Replicas maps a primary's node name to its asynchronous replica
	// (started with env.RedisOptions.ReplicaOf), for Failover.
	Replicas map[string]*env.Redis
	// Servers maps node names (A, B, ...) to this run's lock servers that
	// are not Redis nodes (etcd's and ZooKeeper's members): the faults
	// that stop, kill and restart a server reach them as they reach a
	// Redis node.
	Servers map[string]Server
	// Postgres is this run's PostgreSQL cluster, if it has one. Link
	// faults (Partition, Latency, ConnReset, ConnDrop) name a client's link to it as
	// the node PGNode ("pg"), and its link to the protected storage as
	// StorageNode ("storage"), so no node may be called either.
	Postgres *env.Postgres
	// ClientClocks maps a client number to the control file of the wall
	// clock its worker reads.
	ClientClocks map[int]*clockshim.Control
}

// linksOn says which of a client's links a link fault hits, for On().
// "Client 0" is the replicas' links to their primaries.
func linksOn(client int, nodes []string) string {
	if client == 0 {
		return strings.Join(nodes, ",") + "'s replication link"
	}
	return fmt.Sprintf("client %d -> %s", client, strings.Join(nodes, ","))
}

// clock finds the wall clock of a node (node != "") or of a client,
// refusing any that is not this run's.
func (t *Target) clock(node string, client int) (*clockshim.Control, error) {
	if (node == "") == (client == 0) {
		return nil, fmt.Errorf("a clock fault needs exactly one of a node and a client")
	}
	if node != "" {
		s, err := t.server(node)
		if err != nil {
			return nil, err
		}
		if r, ok := s.(*env.Redis); ok {
			return r.Clock, nil
		}
		// A ZooKeeper member run under the clock shim.
		if c, ok := s.(interface{ Clock() *clockshim.Control }); ok && c.Clock() != nil {
			return c.Clock(), nil
		}
		return nil, fmt.Errorf("node %s runs without the clock shim in this run: no clock fault reaches it", node)
	}
	c, ok := t.ClientClocks[client]
	if !ok || c == nil {
		return nil, fmt.Errorf("client %d has no clock in this run", client)
	}
	return c, nil
}

// PGNode is the node name by which a link fault names a client's link to
// PostgreSQL (its proxy env.LinkName(client, PGNode)) instead of a link
// to a Redis node.
const PGNode = "pg"

// StorageNode names a client's link to the protected storage (its proxy
// env.LinkName(client, StorageNode)).
const StorageNode = "storage"

// Fault is one injectable, healable fault. The runner calls Inject, then
// Heal, and heals every injected fault before it checks the history and
// on every exit path. Every fault here is guarded: Inject either does all
// of its work or, failing part way, undoes what it did and returns the
// error; a second Inject while injected does nothing; Heal before Inject,
// after a failed Inject, or twice does nothing.
type Fault interface {
	// Name is the fault's kind, as scenarios name it ("clock-jump"): its
	// registration's (Spec.Name), never the fault's own.
	Name() string
	Breaker
}

// Breaker is what a fault kind builds (Spec.New): the fault without its
// name and its effect, which its registration gives (Kind.New wraps it).
type Breaker interface {
	// On says what it hits ("C", "client 1 -> D,E").
	On() string
	// Detail gives its size ("+15s").
	Detail() string
	// Fields are its facts for the history: whom it hits, its size, how
	// long it lasts by itself (its effect is its registration's).
	Fields() history.FaultFields
	// Inject breaks the target.
	Inject(ctx context.Context, t *Target) error
	// Heal puts it back.
	Heal(ctx context.Context, t *Target) error
}

// Server is a lock server process a fault can stop, kill and restart: a
// redis-server or an etcd member.
type Server interface {
	Pause() error
	Resume() error
	Running() bool
	Crash()
	Restart(ctx context.Context) error
}

// server finds a lock server of this run (a Redis node, an etcd member),
// refusing any other.
func (t *Target) server(node string) (Server, error) {
	if r, ok := t.Redis[node]; ok {
		return r, nil
	}
	if s, ok := t.Servers[node]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("node %q is not a server of this run", node)
}

// redis finds a node of this run, refusing any other.
func (t *Target) redis(node string) (*env.Redis, error) {
	r, ok := t.Redis[node]
	if !ok {
		return nil, fmt.Errorf("node %q is not a server of this run", node)
	}
	return r, nil
}

// link finds the proxy from client to node (PGNode: to PostgreSQL,
// StorageNode: to the protected storage), refusing any other.
func (t *Target) link(client int, node string) (*env.Link, error) {
	if t.Network == nil {
		return nil, fmt.Errorf("this run has no network proxies")
	}
	if node == PGNode || node == StorageNode {
		l, err := t.Network.Link(env.LinkName(client, node))
		if err != nil {
			what := "PostgreSQL"
			if node == StorageNode {
				what = "the protected storage"
			}
			return nil, fmt.Errorf("client %d has no link to %s in this run", client, what)
		}
		return l, nil
	}
	if _, err := t.server(node); err != nil {
		return nil, err
	}
	return t.Network.Link(env.LinkName(client, node))
}

// links finds the proxies from client to each node, refusing the lot if
// any one is not this run's.
func (t *Target) links(client int, nodes []string) ([]*env.Link, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes named for client %d", client)
	}
	out := make([]*env.Link, 0, len(nodes))
	for _, n := range nodes {
		l, err := t.link(client, n)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// client finds a client's worker process, refusing any other.
func (t *Target) client(c int) (*env.Proc, error) {
	p, ok := t.Clients[c]
	if !ok || p == nil {
		return nil, fmt.Errorf("client %d is not a client of this run", c)
	}
	return p, nil
}

// undoFunc puts back one thing an Inject did.
type undoFunc func(ctx context.Context) error

// guard is the state machine every fault embeds: idle, then injected
// (holding the steps that undo the injection), then idle again on Heal.
type guard struct {
	mu   sync.Mutex
	on   bool
	undo []undoFunc
}

// inject runs do once: do registers an undo step (with add) after each
// change it makes. If do fails, the steps registered so far run, newest
// first, and the fault stays idle. While injected, inject does nothing.
func (g *guard) inject(ctx context.Context, do func(add func(undoFunc)) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		return nil
	}
	var steps []undoFunc
	if err := do(func(u undoFunc) { steps = append(steps, u) }); err != nil {
		if uerr := runUndo(ctx, steps); len(uerr) > 0 {
			return errors.Join(append([]error{err}, uerr...)...)
		}
		return err
	}
	g.on, g.undo = true, steps
	return nil
}

// heal runs the undo steps, newest first. Steps that fail stay, so that
// a second Heal retries only them; when all succeed the fault is idle.
// Heal while idle does nothing.
func (g *guard) heal(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		return nil
	}
	var failed []undoFunc
	var errs []error
	for i := len(g.undo) - 1; i >= 0; i-- {
		if err := g.undo[i](ctx); err != nil {
			failed = append([]undoFunc{g.undo[i]}, failed...)
			errs = append(errs, err)
		}
	}
	g.undo = failed
	g.on = len(failed) > 0
	return errors.Join(errs...)
}

// Injected reports whether the fault is in force (injected, not healed).
func (g *guard) Injected() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.on
}

func runUndo(ctx context.Context, steps []undoFunc) []error {
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// addToxics adds one toxic per (link, stream), named name+"-"+stream,
// registering its removal as an undo step.
func addToxics(links []*env.Link, name, typ string, streams []string, attrs map[string]any, add func(undoFunc)) error {
	for _, l := range links {
		for _, s := range streams {
			tn := name + "-" + s
			if err := l.AddToxic(tn, typ, s, attrs); err != nil {
				return err
			}
			add(func(context.Context) error { return l.RemoveToxic(tn) })
		}
	}
	return nil
}

// named is a Breaker with its kind's name and effect (Kind.New).
type named struct {
	Breaker
	kind, effect string
}

func (n *named) Name() string { return n.kind }

func (n *named) Fields() history.FaultFields {
	f := n.Breaker.Fields()
	f.Effect = n.effect
	return f
}

// Unwrap is the fault as its kind built it (a *Pause, a *Crash...).
func Unwrap(f Fault) Breaker {
	if n, ok := f.(*named); ok {
		return n.Breaker
	}
	return f
}
