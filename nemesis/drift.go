package nemesis

import (
	"context"
	"fmt"
	"math"

	"github.com/locksim/locksim/history"
)

// ClockDrift makes one server's or one client's clocks run fast or slow:
// from Inject on, its wall clock and its monotonic clocks (through the
// clock shim; a client's are the ones its worker reads through its
// control file, as for ClockJump) advance Rate seconds per real second
// (1.5: fast, 0.5: slow), with no jump at the start, as on a machine whose
// oscillator is off or whose NTP daemon slews (clock_gettime(2):
// CLOCK_MONOTONIC "is affected by the incremental adjustments performed by
// adjtime(3) and NTP"). The process's timed waits stretch or shrink with
// them. TTLs a Redis server counts by its wall clock then run out early
// (Rate > 1) or late (Rate < 1); a client believes its lease for longer
// (Rate < 1) or shorter, whichever clock its lock times it by.
//
// Heal restores the rate the clocks had before and steps the wall clock
// back by exactly the skew this drift accumulated, as ntpd steps a clock
// that has wandered too far: the wall clock jumps at heal (back when
// Rate > 1), the monotonic clocks never do (they go on from where they
// stand, at the old rate), and other clock faults on it (a ClockJump) stay
// in force. Set exactly one of Node and Client.
type ClockDrift struct {
	Node   string
	Client int
	Rate   float64
	guard
}

func (f *ClockDrift) On() string     { return ClientOrNode{f.Client, f.Node}.who() }
func (f *ClockDrift) Detail() string { return fmt.Sprintf("x%g", f.Rate) }

func (f *ClockDrift) Inject(ctx context.Context, t *Target) error {
	clock, err := t.clock(f.Node, f.Client)
	if err != nil {
		return err
	}
	if !(f.Rate > 0) || math.IsInf(f.Rate, 0) {
		return fmt.Errorf("clock drift on %s: rate %v must be a positive number", f.On(), f.Rate)
	}
	rate := f.Rate
	return f.inject(ctx, func(add func(undoFunc)) error {
		prevRate, skew0 := clock.Rate(), clock.Skew()
		clock.SetRate(rate)
		add(func(context.Context) error {
			clock.SetRate(prevRate)
			// Skew is offset + drift; take off what this drift added.
			clock.Jump(skew0 - clock.Skew())
			return nil
		})
		return nil
	})
}

func (f *ClockDrift) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

// MaxDriftPPM is the most a real machine's clock runs off real speed, in
// parts per million: NTP slews at most this much, and an oscillator's error
// is smaller (the kind's Realistic says the sources). A drift past it is a
// story that teaches, and sim findings does not count it.
const MaxDriftPPM = 500

// ClockDriftParams are a clock-drift step's fields.
type ClockDriftParams struct {
	ClientOrNode `yaml:",inline"`
	// Rate is how fast the clock runs: 1.5 runs it 50% fast, 0.5 half as
	// fast as real time.
	Rate float64 `yaml:"rate"`
}

func init() {
	Register(Spec[ClockDriftParams]{Name: "clock-drift", Doc: "run the node's or the client's clocks (wall and monotonic) at `rate` times real speed",
		Realistic: "within 500 ppm of real speed: a quartz oscillator is off by tens to hundreds of ppm (Kleppmann, Designing Data-Intensive Applications, 2017, chapter 8, \"Unreliable Clocks\": Google assumes 200 ppm), and NTP slews a clock by at most 500 ppm (ntpd's documentation, https://www.ntp.org/documentation/4.2.8-series/ntpd/, option -x)",
		Effect:    history.EffectClock, Available: nodeClock,
		Needs: []string{"rate"},
		Check: func(p *ClockDriftParams, f Facts) *ParamError {
			if err := firstRefusal(p.exactlyOne("clock-drift"), noNodeClock(p.Node, f)); err != nil {
				return err
			}
			if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
				return &ParamError{"rate", fmt.Sprintf("expected a rate above 0, got %g", p.Rate)}
			}
			return nil
		},
		New: func(p *ClockDriftParams) Breaker { return &ClockDrift{Node: p.Node, Client: p.Client, Rate: p.Rate} },
		Unrealistic: func(p *ClockDriftParams) string {
			if ppm := math.Abs(p.Rate-1) * 1e6; ppm > MaxDriftPPM {
				return fmt.Sprintf("a clock at x%g runs %.0f ppm off real speed, where an oscillator is off by tens to hundreds of ppm and NTP slews at most %d ppm", p.Rate, ppm, MaxDriftPPM)
			}
			return ""
		},
		Draw: &Draw[ClockDriftParams]{
			Generated: Generated{Drawn: Drawn{Name: "drift", Unit: UnitRate, Doc: "rate of the clock-drift fault (a number: 1.5 runs the clock 50% fast)",
				What: "the clock drift", Range: [2]float64{1, 3}, Classic: 3},
				OnNode: true, Whole: true},
			Params: func(a Aim, x float64) ClockDriftParams {
				return ClockDriftParams{ClientOrNode: ClientOrNode{Node: a.Node}, Rate: x}
			}}})
}

func (f *ClockDrift) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Node: f.Node, Rate: f.Rate}
}
