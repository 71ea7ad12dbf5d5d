package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/history"
)

// Latency delays the bytes on one client's links to some nodes (a
// toxiproxy latency toxic): each chunk of data waits Delay, plus or minus
// up to Jitter, before it is passed on. Stream says which way: "upstream"
// (client to server), "downstream" (server to client), or "both" (the
// default; the round trip then grows by about 2*Delay). A request still
// arrives, only late: a lock reply can come back after the lease it
// grants has run out, or a write can reach storage after the lock did.
// Nodes may include PGNode. Heal removes the toxics; data already held
// back is still delivered late.
//
// A pass-through toxic follows the latency on each stream. toxiproxy
// adds a toxic after the last one, and the last one, interrupted, lets
// the chunk it holds go at once ("Exit fast without applying latency"):
// without the pass-through, a partition or a reset struck during the
// delay would let that chunk reach the server, where a real network
// would have lost it.
type Latency struct {
	Client int
	Nodes  []string
	Delay  time.Duration
	Jitter time.Duration
	Stream string
	guard
}

const latencyToxic = "latency"

func (f *Latency) On() string { return linksOn(f.Client, f.Nodes) }
func (f *Latency) Detail() string {
	s := f.Delay.String()
	if f.Jitter > 0 {
		s += " ±" + f.Jitter.String()
	}
	return s + " " + f.stream()
}

func (f *Latency) stream() string {
	if f.Stream == "" {
		return "both"
	}
	return f.Stream
}

func (f *Latency) Inject(ctx context.Context, t *Target) error {
	var streams []string
	switch f.stream() {
	case "both":
		streams = bothStreams
	case "upstream", "downstream":
		streams = []string{f.Stream}
	default:
		return fmt.Errorf("latency: stream %q: want upstream, downstream or both", f.Stream)
	}
	if f.Delay < 0 || f.Jitter < 0 {
		return fmt.Errorf("latency: negative delay %v or jitter %v", f.Delay, f.Jitter)
	}
	links, err := t.links(f.Client, f.Nodes)
	if err != nil {
		return err
	}
	// toxiproxy counts in whole milliseconds.
	attrs := map[string]any{"latency": f.Delay.Milliseconds(), "jitter": f.Jitter.Milliseconds()}
	return f.inject(ctx, func(add func(undoFunc)) error {
		if err := addToxics(links, latencyToxic, "latency", streams, attrs, add); err != nil {
			return err
		}
		return addToxics(links, latencyToxic+"-hold", "noop", streams, nil, add)
	})
}

func (f *Latency) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

// LatencyParams are a latency step's fields.
type LatencyParams struct {
	ClientLinks `yaml:",inline"`
	// Delay is how long each chunk of data waits on the links.
	Delay time.Duration `yaml:"delay"`
	// Jitter varies the delay by up to this much either way.
	Jitter time.Duration `yaml:"jitter"`
	// Stream is the direction delayed: upstream (client to server),
	// downstream or both (the default).
	Stream string `yaml:"stream"`
}

func init() {
	Register(Spec[LatencyParams]{Name: "latency", Doc: "delay the client's traffic to the nodes by `delay` (± `jitter`)",
		Realistic: "any delay: a packet may be held for any time, and a network does not say how long (Kleppmann, \"How to do distributed locking\", 2016, section \"Breaking Redlock with bad timings\")",
		Needs:     []string{"client", "links", "delay"},
		Effect:    history.EffectNetwork, Shape: Shape{Links: true, Delays: true}, Available: clientLinks,
		Check: func(p *LatencyParams, _ Facts) *ParamError {
			switch p.Stream {
			case "", "upstream", "downstream", "both":
			default:
				return &ParamError{"stream", fmt.Sprintf("expected upstream, downstream or both, got %q", p.Stream)}
			}
			return firstRefusal(nonNegative("delay", p.Delay), nonNegative("jitter", p.Jitter))
		},
		New: func(p *LatencyParams) Breaker {
			return &Latency{Client: p.Client, Nodes: p.Links, Delay: p.Delay, Jitter: p.Jitter, Stream: p.Stream}
		},
		// A generated latency delays the client's link to the storage:
		// its read and its write both arrive late. A hunt may choose
		// the links.
		Draw: &Draw[LatencyParams]{
			Generated: Generated{Drawn: Drawn{Name: "delay", Doc: "delay of the latency fault", What: "the network delay", Range: [2]float64{0.1, 2}, Classic: 1},
				UntilSectionEnds: true, Outlasts: func(d time.Duration) time.Duration { return 2 * d }},
			Params: func(a Aim, x float64) LatencyParams {
				links := a.Links
				if len(links) == 0 {
					links = []string{StorageNode}
				}
				return LatencyParams{ClientLinks: ClientLinks{Client: a.Client, Links: links}, Delay: time.Duration(x)}
			}}})
}

func (f *Latency) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Links: f.Nodes, Size: int64(f.Delay)}
}
