package nemesis

import (
	"context"

	"github.com/locksim/locksim/history"
)

// ConnDrop closes one client's connections to some nodes at once, both
// sides, and refuses new ones (the proxy stops listening): the server sees
// its peer's socket close right away. PostgreSQL then ends the session and
// frees its session advisory locks within a millisecond, while a client
// that does not speak still believes it holds them. Heal listens again;
// the dropped connections stay closed (the client must reconnect).
type ConnDrop struct {
	Client int
	Nodes  []string
	guard
}

func (f *ConnDrop) On() string     { return linksOn(f.Client, f.Nodes) }
func (f *ConnDrop) Detail() string { return "connections closed, new ones refused" }

func (f *ConnDrop) Inject(ctx context.Context, t *Target) error {
	links, err := t.links(f.Client, f.Nodes)
	if err != nil {
		return err
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		for _, l := range links {
			l.Disable()
			add(func(context.Context) error { return l.Enable() })
		}
		return nil
	})
}

func (f *ConnDrop) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

func init() {
	Register(Spec[ClientLinks]{Name: "drop", Doc: "close the client's connections to the nodes at once, both sides",
		Realistic: "any time: a proxy, a pooler or a load balancer closes connections when it restarts or times them out",
		Needs:     []string{"client", "links"},
		Effect:    history.EffectNetwork, Shape: Shape{Links: true}, Available: clientLinks, Place: onLinks,
		New: func(p *ClientLinks) Breaker { return &ConnDrop{Client: p.Client, Nodes: p.Links} }})
}

func (f *ConnDrop) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Links: f.Nodes}
}
