package nemesis

import (
	"context"
	"fmt"
	"time"
)

// ClockJump moves one server's wall clock (CLOCK_REALTIME, gettimeofday,
// time) by By at once, through the clock shim in its process. Redis
// expires keys by this clock, so a forward jump past a key's TTL expires it.
// Heal sets the offset back to zero (a jump back by the same amount).
type ClockJump struct {
	Node string
	By   time.Duration
}

func (f *ClockJump) Name() string   { return "clock-jump" }
func (f *ClockJump) On() string     { return f.Node }
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
	r.Clock.Jump(f.By)
	return nil
}

func (f *ClockJump) Heal(ctx context.Context, t *Target) error {
	r, err := t.redis(f.Node)
	if err != nil {
		return err
	}
	r.Clock.Jump(-f.By)
	return nil
}
