package nemesis

import (
	"context"

	"github.com/locksim/locksim/history"
)

// ConnReset resets one client's connections to some nodes (a toxiproxy
// reset_peer toxic, timeout 0): the next time data flows on a connection,
// in either direction, the proxy closes both sides with SO_LINGER 0, so
// the client and the server each get a TCP RST. An idle connection is
// untouched until it next speaks. Nodes may include PGNode: PostgreSQL
// then ends that session and frees its session advisory locks at once,
// while the client, if it does not speak, still believes it holds them.
// New connections made while the fault is in force are reset the same
// way when they speak. Heal removes the toxics; reset connections stay
// closed (the client must reconnect).
type ConnReset struct {
	Client int
	Nodes  []string
	guard
}

const resetToxic = "reset"

func (f *ConnReset) On() string     { return linksOn(f.Client, f.Nodes) }
func (f *ConnReset) Detail() string { return "RST when data next flows" }

func (f *ConnReset) Inject(ctx context.Context, t *Target) error {
	links, err := t.links(f.Client, f.Nodes)
	if err != nil {
		return err
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		return addToxics(links, resetToxic, "reset_peer", bothStreams, map[string]any{"timeout": 0}, add)
	})
}

func (f *ConnReset) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

func init() {
	Register(Spec[ClientLinks]{Name: "reset", Doc: "TCP RST on the client's connections to the nodes when data next flows",
		Realistic: "any time: a middlebox that lost a connection's state answers it with an RST",
		Needs:     []string{"client", "links"},
		Effect:    history.EffectNetwork, Shape: Shape{Links: true}, Available: clientLinks, Place: onLinks,
		New: func(p *ClientLinks) Breaker { return &ConnReset{Client: p.Client, Nodes: p.Links} }})
}

func (f *ConnReset) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Links: f.Nodes}
}
