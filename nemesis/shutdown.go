package nemesis

import (
	"context"
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
type Shutdown struct{ machineOff }

// NewShutdown is a clean shutdown of node, which restarts after
// restartAfter (0: at once).
func NewShutdown(node string, restartAfter time.Duration) *Shutdown {
	f := &Shutdown{}
	// env.Redis.Shutdown bounds itself: the command by its client's
	// timeouts, the wait for the exit by RedisStartTimeout.
	f.init(node, restartAfter, "SHUTDOWN, then power off", "shutdown", func(ctx context.Context, r *env.Redis) (int64, error) { return r.Shutdown(ctx) })
	return f
}

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
