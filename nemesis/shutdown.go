package nemesis

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
)

// Shutdown stops a Redis node the clean way, as an upgrade does: the
// SHUTDOWN command, with which Redis flushes and syncs its append-only
// file before it exits. Then its machine goes off as in PowerLoss, the
// OS page cache with it, so the files keep only what a sync put on the
// disk: what the node had acknowledged is there, because the shutdown
// synced it (the fault's detail says how many bytes the cut took, none
// when it did). It is what sets a clean shutdown apart from a power cut
// (PowerLoss) under appendfsync everysec. The node restarts as after a
// Crash: at once, or after RestartAfter.
type Shutdown struct {
	Node         string
	RestartAfter time.Duration
	// lost is the bytes the power-off took after the shutdown, -1 before
	// it struck.
	lost atomic.Int64
	// crash is the stop and the restart, its kill the shutdown.
	crash Crash
}

// NewShutdown is a clean shutdown of node, which restarts after
// restartAfter (0: at once).
func NewShutdown(node string, restartAfter time.Duration) *Shutdown {
	f := &Shutdown{Node: node, RestartAfter: restartAfter, crash: Crash{Node: node, RestartAfter: restartAfter}}
	f.lost.Store(-1)
	return f
}

func (f *Shutdown) On() string { return f.Node }

func (f *Shutdown) Detail() string {
	d := "SHUTDOWN, then power off, restart at once"
	if f.RestartAfter > 0 {
		d = fmt.Sprintf("SHUTDOWN, then power off, restart after %v", f.RestartAfter)
	}
	if n := f.lost.Load(); n >= 0 {
		d += fmt.Sprintf(" (%d bytes lost)", n)
	}
	return d
}

func (f *Shutdown) Inject(ctx context.Context, t *Target) error {
	r, err := t.redis(f.Node)
	if err != nil {
		return fmt.Errorf("shutdown %s: only a Redis node is shut down with SHUTDOWN: %w", f.Node, err)
	}
	f.crash.down = func(Server) error {
		sctx, cancel := context.WithTimeout(ctx, 2*env.RedisStartTimeout)
		defer cancel()
		n, err := r.Shutdown(sctx)
		f.lost.Store(n)
		return err
	}
	return f.crash.Inject(ctx, t)
}

func (f *Shutdown) Heal(ctx context.Context, t *Target) error { return f.crash.Heal(ctx, t) }

// Fields are a crash's: the node, down until it restarts.
func (f *Shutdown) Fields() history.FaultFields { return f.crash.Fields() }

// ShutdownParams are a shutdown step's fields.
type ShutdownParams struct {
	OneNode `yaml:",inline"`
	// For is how long the node stays off before it restarts; not given:
	// it restarts at once.
	For time.Duration `yaml:"for"`
}

func init() {
	Register(Spec[ShutdownParams]{Name: "shutdown",
		Realistic: "any time: an upgrade or a reboot stops a server cleanly (the Redis page's own example: \"we can upgrade a server by sending it a SHUTDOWN command and restarting it\")",
		Doc:       "stop a Redis node cleanly (SHUTDOWN: it syncs its append-only file and exits), then power its machine off, losing what no sync reached; it restarts after `for` (at once if not given)",
		Effect:    history.EffectDown, Available: redisNodes,
		Needs: []string{"node"},
		Check: func(p *ShutdownParams, _ Facts) *ParamError { return nonNegative("for", p.For) },
		New:   func(p *ShutdownParams) Breaker { return NewShutdown(p.Node, p.For) }})
}
