package nemesis

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
)

// PowerLoss cuts a Redis node's power: the process dies at once (kill
// -9), and with it the OS page cache, so the node's files keep only what
// an fsync or fdatasync had put on the disk; a write Redis had made but
// not synced is gone. This is what a kill -9 alone (Crash) does not do,
// and what tells Redis's appendfsync policies apart: with always, Redis
// syncs each write before it replies, so every acknowledged lock
// survives; with everysec, a write waits up to a second for the
// background sync, and a lock granted in that window is lost. The clock
// shim inside the server records the length of each file at each sync
// (env.Redis.PowerLoss cuts the files back to it). The node restarts as
// after a Crash: at once, or after RestartAfter.
type PowerLoss struct{ machineOff }

// NewPowerLoss is a power loss of node, which restarts after
// restartAfter (0: at once).
func NewPowerLoss(node string, restartAfter time.Duration) *PowerLoss {
	f := &PowerLoss{}
	f.init(node, restartAfter, "power cut", "power-loss", func(_ context.Context, r *env.Redis) (int64, error) { return r.PowerLoss() })
	return f
}

// machineOff is a Redis node whose machine goes off (PowerLoss, and
// Shutdown after its SHUTDOWN): off takes the server down and cuts its
// files back to what a sync reached, returning the bytes cut; the node
// restarts as after a Crash.
type machineOff struct {
	Node         string
	RestartAfter time.Duration
	// how says how it goes down, for its detail ("power cut"); kind is
	// the fault's name, for errors.
	how, kind string
	off       func(context.Context, *env.Redis) (int64, error)
	// lost is the bytes the cut took, -1 before it struck.
	lost atomic.Int64
	// crash is the kill and the restart, its kill off.
	crash Crash
}

// init sets f up to strike node, restarting after restartAfter (0: at
// once).
func (f *machineOff) init(node string, restartAfter time.Duration, how, kind string, off func(context.Context, *env.Redis) (int64, error)) {
	f.Node, f.RestartAfter, f.how, f.kind, f.off = node, restartAfter, how, kind, off
	f.crash.Node, f.crash.RestartAfter = node, restartAfter
	f.lost.Store(-1)
}

func (f *machineOff) On() string { return f.Node }

func (f *machineOff) Detail() string {
	d := f.how + ", writes not yet fsynced lost, restart at once"
	if f.RestartAfter > 0 {
		d = fmt.Sprintf("%s, writes not yet fsynced lost, restart after %v", f.how, f.RestartAfter)
	}
	if n := f.lost.Load(); n >= 0 {
		d += fmt.Sprintf(" (%d bytes lost)", n)
	}
	return d
}

func (f *machineOff) Inject(ctx context.Context, t *Target) error {
	r, err := t.redis(f.Node)
	if err != nil {
		return fmt.Errorf("%s %s: only a Redis node's files are followed by its clock shim: %w", f.kind, f.Node, err)
	}
	f.crash.down = func(Server) error {
		n, err := f.off(ctx, r)
		f.lost.Store(n)
		return err
	}
	return f.crash.Inject(ctx, t)
}

func (f *machineOff) Heal(ctx context.Context, t *Target) error { return f.crash.Heal(ctx, t) }

// Fields are a crash's: the node, down until it restarts.
func (f *machineOff) Fields() history.FaultFields { return f.crash.Fields() }

// PowerLossParams are a power-loss step's fields.
type PowerLossParams struct {
	OneNode `yaml:",inline"`
	// For is how long the node stays off before it restarts; not given:
	// it restarts at once.
	For time.Duration `yaml:"for"`
}

func init() {
	Register(Spec[PowerLossParams]{Name: "power-loss",
		Realistic: "any time: a machine loses power with its page cache (fsync(2), Linux man-pages 6.03, https://man7.org/linux/man-pages/man2/fsync.2.html)",
		Doc:       "cut a Redis node's power: kill -9, and its files lose what no fsync reached; it restarts after `for` (at once if not given)",
		Effect:    history.EffectDown, Available: redisNodes,
		Needs: []string{"node"},
		Check: func(p *PowerLossParams, f Facts) *ParamError {
			if !f.Persistent {
				return &ParamError{"do", "power-loss needs Redis nodes that keep a file (persistence: everysec or always); with none a power loss is a crash"}
			}
			return nonNegative("for", p.For)
		},
		New: func(p *PowerLossParams) Breaker { return NewPowerLoss(p.Node, p.For) },
		// A hunt cuts a node's power and draws how long it stays off; its
		// story gives the nodes persistence everysec, Redis's default
		// fsync policy (hunt/story.go).
		Draw: &Draw[PowerLossParams]{
			Generated: Generated{Drawn: Drawn{Name: "power-off", Doc: "how long a node stays off after the power-loss fault", What: "the power loss", Range: [2]float64{0, 1.5}, Classic: 0},
				OnNode: true, HuntOnly: true},
			Params: func(a Aim, x float64) PowerLossParams {
				return PowerLossParams{OneNode: OneNode{a.Node}, For: time.Duration(x)}
			}}})
}
