package nemesis

import (
	"context"
	"fmt"
	"math"
	"time"

	"locksim/history"
)

// ClockDrift makes one server's wall clock run fast or slow: from Inject
// on, the server's CLOCK_REALTIME (through the clock shim) advances Rate
// seconds per real second (1.5: fast, 0.5: slow), with no jump at the
// start. TTLs a Redis server counts by its wall clock then run out early
// (Rate > 1) or late (Rate < 1), as on a machine whose NTP daemon slews
// or whose oscillator is off.
//
// Heal restores the rate the node had before and steps the clock back by
// exactly the skew this drift accumulated, as ntpd steps a clock that has
// wandered too far: the server's clock jumps at heal (back when Rate > 1),
// and other clock faults on the node (a ClockJump) stay in force.
type ClockDrift struct {
	Node string
	Rate float64
	guard
}

func (f *ClockDrift) Name() string   { return "clock-drift" }
func (f *ClockDrift) On() string     { return f.Node }
func (f *ClockDrift) Detail() string { return fmt.Sprintf("x%g", f.Rate) }

func (f *ClockDrift) Inject(ctx context.Context, t *Target) error {
	r, err := t.redis(f.Node)
	if err != nil {
		return err
	}
	if !(f.Rate > 0) || math.IsInf(f.Rate, 0) {
		return fmt.Errorf("clock drift on %s: rate %v must be a positive number", f.Node, f.Rate)
	}
	rate := f.Rate
	return f.inject(ctx, func(add func(undoFunc)) error {
		prevRate, skew0 := r.Clock.Rate(), r.Clock.Skew()
		r.Clock.SetRate(rate)
		add(func(context.Context) error {
			r.Clock.SetRate(prevRate)
			// Skew is offset + drift; take off what this drift added.
			r.Clock.Jump(skew0 - r.Clock.Skew())
			return nil
		})
		return nil
	})
}

func (f *ClockDrift) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

func init() {
	Register(Kind{Name: "clock-drift", Doc: "run the node's wall clock at `rate` times real speed",
		Needs: []string{"node", "rate"},
		Check: all(noNodeClock, func(p Params, _ Facts) *ParamError {
			if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
				return &ParamError{"rate", fmt.Sprintf("expected a rate above 0, got %g", p.Rate)}
			}
			return nil
		}),
		New: func(p Params) Fault { return &ClockDrift{Node: p.Node, Rate: p.Rate} },
		Generate: &Generated{Size: "drift", OnNode: true, Whole: true,
			Build: func(_ int, n string, _ time.Duration, r float64) Fault { return &ClockDrift{Node: n, Rate: r} }}})
}

func (f *ClockDrift) Fields() history.FaultFields {
	return history.FaultFields{Effect: history.EffectClock, Node: f.Node, Rate: f.Rate}
}
