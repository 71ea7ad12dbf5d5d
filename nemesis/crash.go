package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/locksim/locksim/env"

	"github.com/locksim/locksim/history"
)

// Crash kills one Redis server with SIGKILL: no shutdown, no final fsync,
// every connection reset. What survives is what the server had on disk,
// which is its Persistence option (set when the runner started it):
// env.PersistNone loses every key; env.PersistEverysec loses nothing to a
// kill -9 (the appended writes are in the OS page cache; an OS crash or a
// power loss, which this fault is not (PowerLoss is), could lose the last
// second); env.PersistAlways loses nothing that was acknowledged.
// A lock node that comes back empty lets a second client take a lock the
// first still holds.
//
// The server restarts (same port, dir, options and clock) at once inside
// Inject when RestartAfter is 0; after RestartAfter, in the background
// (Inject returns at once); or only on Heal with NoRestart. Heal makes
// sure the server runs again: it cuts a pending delay short, restarts it
// if it is down, and waits for the restart. The lost data is not healed.
//
// With NodeClock the delay is counted on the node's own wall clock (its
// clock shim), as a node does that, on start, waits until its clock says
// RestartAfter has passed since it went down: across a reboot the wall
// clock is the only clock that survives. A clock jump on the node while
// it is down then moves the restart (Kleppmann's caveat: delayed restarts
// "would fail if the clock jumps").
type Crash struct {
	Node         string
	RestartAfter time.Duration
	NoRestart    bool
	NodeClock    bool
	// down, when set, takes the server down instead of a kill -9 (a
	// power loss: PowerLoss).
	down func(Server) error
	guard
}

func (f *Crash) On() string { return f.Node }
func (f *Crash) Detail() string {
	switch {
	case f.NoRestart:
		return "kill -9, restart on heal"
	case f.RestartAfter > 0 && f.NodeClock:
		return fmt.Sprintf("kill -9, restart after %v by the node's own clock", f.RestartAfter)
	case f.RestartAfter > 0:
		return fmt.Sprintf("kill -9, restart after %v", f.RestartAfter)
	}
	return "kill -9, restart at once"
}

func (f *Crash) Inject(ctx context.Context, t *Target) error {
	r, err := t.server(f.Node)
	if err != nil {
		return err
	}
	var clock interface{ Now() time.Time }
	if f.NodeClock {
		rs, err := t.redis(f.Node)
		if err != nil {
			return fmt.Errorf("crash %s: a restart delay counted on the node's clock needs a Redis node's clock shim: %w", f.Node, err)
		}
		clock = rs.Clock
	}
	if f.RestartAfter < 0 {
		return fmt.Errorf("crash %s: negative RestartAfter %v", f.Node, f.RestartAfter)
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		if !r.Running() {
			return fmt.Errorf("crash %s: the server is not running", f.Node)
		}
		var downAt time.Time
		if clock != nil {
			downAt = clock.Now()
		}
		if f.down == nil {
			r.Crash()
		} else if err := f.down(r); err != nil {
			// The server is down: the undo (or Heal) restarts it.
			add(func(ctx context.Context) error { return ensureRunning(ctx, r) })
			return err
		}
		switch {
		case f.NoRestart:
			add(func(ctx context.Context) error { return ensureRunning(ctx, r) })
		case f.RestartAfter == 0:
			// If this restart fails, the undo (or Heal) tries again.
			add(func(ctx context.Context) error { return ensureRunning(ctx, r) })
			return restart(ctx, r)
		default:
			now := make(chan struct{})
			var nowOnce sync.Once
			done := make(chan error, 1)
			go func() {
				if f.NodeClock {
					waitNodeClock(clock, downAt.Add(f.RestartAfter), now)
				} else {
					select {
					case <-time.After(f.RestartAfter):
					case <-now:
					}
				}
				rctx, cancel := context.WithTimeout(context.Background(), 2*env.RedisStartTimeout)
				defer cancel()
				done <- restart(rctx, r)
			}()
			add(func(ctx context.Context) error {
				nowOnce.Do(func() { close(now) })
				select {
				case <-done: // on failure, ensureRunning tries again
					done <- nil // a retried Heal does not wait again
				case <-ctx.Done():
					return fmt.Errorf("crash %s: waiting for the restart: %w", f.Node, ctx.Err())
				}
				return ensureRunning(ctx, r)
			})
		}
		return nil
	})
}

func (f *Crash) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

// waitNodeClock returns when r's shifted clock reads until or later, or
// when now is closed (Heal cuts the delay short).
func waitNodeClock(clock interface{ Now() time.Time }, until time.Time, now <-chan struct{}) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for clock.Now().Before(until) {
		select {
		case <-tick.C:
		case <-now:
			return
		}
	}
}

func restart(ctx context.Context, r Server) error {
	if err := r.Restart(ctx); err != nil {
		return fmt.Errorf("restart after crash: %w", err)
	}
	return nil
}

// ensureRunning restarts r unless it runs.
func ensureRunning(ctx context.Context, r Server) error {
	if r.Running() {
		return nil
	}
	return restart(ctx, r)
}

// CrashParams are a crash step's fields.
type CrashParams struct {
	OneNode `yaml:",inline"`
	// For is how long the node stays down before it restarts; not given:
	// it restarts at once.
	For time.Duration `yaml:"for"`
	// NodeClock counts the restart delay (for) on the node's own wall
	// clock, as a node that waits out the delay on start does: a clock
	// jump on the node while it is down moves its restart.
	NodeClock bool `yaml:"node_clock"`
}

func init() {
	Register(Spec[CrashParams]{Name: "crash", Doc: "kill -9 the node; it restarts after `for` (at once if not given)",
		Realistic: "any time, any restart delay: a process killed by the kernel's OOM killer or a kill -9 is restarted by its supervisor at once or later",
		Effect:    history.EffectDown, Available: lockNodes, OnPostgres: true,
		Needs: []string{"node"},
		Check: func(p *CrashParams, _ Facts) *ParamError {
			if p.NodeClock && p.For == 0 {
				return &ParamError{"node_clock", "node_clock counts a crash's restart delay: it needs a for"}
			}
			return nonNegative("for", p.For)
		},
		New: func(p *CrashParams) Breaker { return &Crash{Node: p.Node, RestartAfter: p.For, NodeClock: p.NodeClock} },
		// A hunt crashes a node and draws how long it stays down.
		Draw: &Draw[CrashParams]{
			Generated: Generated{Drawn: Drawn{Name: "restart", Doc: "restart delay of the crash fault", What: "the restart delay", Range: [2]float64{0, 1.5}, Classic: 0},
				OnNode: true, HuntOnly: true},
			Params: func(a Aim, x float64) CrashParams {
				return CrashParams{OneNode: OneNode{a.Node}, For: time.Duration(x)}
			}}})
}

func (f *Crash) Fields() history.FaultFields {
	ff := history.FaultFields{Node: f.Node}
	switch {
	case f.NoRestart:
	case f.RestartAfter > 0:
		ff.Lasts = int64(f.RestartAfter)
	default:
		ff.Lasts = 1 // restarted at once
	}
	return ff
}
