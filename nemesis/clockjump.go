package nemesis

import (
	"context"
	"fmt"
	"time"
)

// ClockJump moves one server's wall clock (CLOCK_REALTIME, gettimeofday,
// time) by By at once, through the clock shim in its process. Redis
// expires keys by this clock, so a forward jump past a key's TTL expires it.
// Heal jumps back by By, which undoes exactly this jump and leaves any
// other clock fault on the node in force.
type ClockJump struct {
	Node string
	By   time.Duration
	guard
}

func (f *ClockJump) Name() string { return "clock-jump" }
func (f *ClockJump) On() string   { return f.Node }
func (f *ClockJump) Detail() string {
	if f.By >= 0 {
		return fmt.Sprintf("+%v", f.By)
	}
	return f.By.String()
}

func (f *ClockJump) Inject(ctx context.Context, t *Target) error {
	r, err := t.redis(f.Node)
	if err != nil {
		return err
	}
	by := f.By
	return f.inject(ctx, func(add func(undoFunc)) error {
		r.Clock.Jump(by)
		add(func(context.Context) error { r.Clock.Jump(-by); return nil })
		return nil
	})
}

func (f *ClockJump) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }
