package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/history"
)

// ClockJump moves one server's or one client's wall clock by By at once.
// A server's (Node) is shifted by the clock shim in its process
// (CLOCK_REALTIME, gettimeofday, time): Redis expires keys by this clock,
// so a forward jump past a key's TTL expires it. A client's (Client) is
// the wall clock its worker reads through the same kind of control file
// (workers are static Go binaries, out of LD_PRELOAD's reach): a lock that
// measures its validity by the wall clock then believes a backward jump.
// Heal jumps back by By, which undoes exactly this jump and leaves any
// other clock fault in force. Set exactly one of Node and Client.
type ClockJump struct {
	Node   string
	Client int
	By     time.Duration
	guard
}

func (f *ClockJump) On() string { return ClientOrNode{f.Client, f.Node}.who() }
func (f *ClockJump) Detail() string {
	if f.By >= 0 {
		return fmt.Sprintf("+%v", f.By)
	}
	return f.By.String()
}

func (f *ClockJump) Inject(ctx context.Context, t *Target) error {
	clock, err := t.clock(f.Node, f.Client)
	if err != nil {
		return err
	}
	by := f.By
	return f.inject(ctx, func(add func(undoFunc)) error {
		clock.Jump(by)
		add(func(context.Context) error { clock.Jump(-by); return nil })
		return nil
	})
}

func (f *ClockJump) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

// ClockJumpParams are a clock-jump step's fields.
type ClockJumpParams struct {
	ClientOrNode `yaml:",inline"`
	// By is how far the clock jumps: forward, or back when negative.
	By time.Duration `yaml:"by"`
}

func init() {
	Register(Spec[ClockJumpParams]{Name: "clock-jump", Doc: "move the node's or the client's wall clock by `by`",
		Realistic: "any size: CLOCK_REALTIME \"is affected by discontinuous jumps in the system time (e.g., if the system administrator manually changes the clock)\" (Linux man-pages 6.03, clock_gettime(2), https://man7.org/linux/man-pages/man2/clock_gettime.2.html, CLOCK_REALTIME); an NTP step or a VM resumed from a snapshot moves it by any amount",
		Effect:    history.EffectClock, Shape: Shape{ClientsToo: true},
		Needs: []string{"by"},
		Check: func(p *ClockJumpParams, f Facts) *ParamError {
			return firstRefusal(p.exactlyOne("clock-jump"), noNodeClock(p.Node, f))
		},
		New: func(p *ClockJumpParams) Breaker { return &ClockJump{Node: p.Node, Client: p.Client, By: p.By} },
		Draw: &Draw[ClockJumpParams]{
			Generated: Generated{Drawn: Drawn{Name: "jump", Doc: "size of the clock-jump fault", What: "the clock jump", Range: [2]float64{0.2, 3}, Classic: 1.5},
				OnNode: true},
			// A generator draws a node; a hunt may step a client's clock
			// instead (no node given).
			Params: func(a Aim, x float64) ClockJumpParams {
				if a.Node == "" {
					return ClockJumpParams{ClientOrNode: ClientOrNode{Client: a.Client}, By: time.Duration(x)}
				}
				return ClockJumpParams{ClientOrNode: ClientOrNode{Node: a.Node}, By: time.Duration(x)}
			}}})
}

func (f *ClockJump) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Node: f.Node, Size: int64(f.By)}
}
