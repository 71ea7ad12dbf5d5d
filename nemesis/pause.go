package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/locksim/locksim/history"
)

// Pause freezes a process with SIGSTOP, as a long GC pause, a VM
// migration or a swapped-out process would: either a client's worker
// (Client; the whole process group, so its watchdog goroutine stops too
// and replies wait in kernel buffers) or a Redis server (Node; it keeps
// its connections and answers nothing). Set exactly one: Node, or Client
// (numbered from 1) with Node empty.
//
// With For > 0 a timer sends SIGCONT after For and Inject returns at once;
// with For == 0 the process stays stopped until Heal. Heal always sends
// SIGCONT (harmless if the timer already did, or the process has exited).
type Pause struct {
	Client int
	Node   string
	For    time.Duration
	guard
	// signalled holds the CLOCK_MONOTONIC instants of the last SIGSTOP
	// and of the first SIGCONT after it (0: not yet): the pause as the
	// harness struck it (Signalled).
	signalled struct {
		sync.Mutex
		stop, cont int64
	}
}

// Signalled is the last pause as struck, on CLOCK_MONOTONIC
// (history.Monotonic): its SIGSTOP and the SIGCONT that ended it (cont is
// 0 while the process is still stopped). A loaded machine sends the timer's
// SIGCONT late, and the process may run later still (the runner measures
// that from the client's own report).
func (f *Pause) Signalled() (stop, cont int64) {
	f.signalled.Lock()
	defer f.signalled.Unlock()
	return f.signalled.stop, f.signalled.cont
}

func (f *Pause) On() string { return ClientOrNode{f.Client, f.Node}.who() }
func (f *Pause) Detail() string {
	if f.For > 0 {
		return f.For.String()
	}
	return "until heal"
}

func (f *Pause) Inject(ctx context.Context, t *Target) error {
	if f.For < 0 {
		return fmt.Errorf("pause %s: negative duration %v", f.On(), f.For)
	}
	var stop, cont func() error
	switch {
	case f.Node != "" && f.Client != 0:
		return fmt.Errorf("pause: set either Node (%q) or Client (%d), not both", f.Node, f.Client)
	case f.Node != "":
		r, err := t.server(f.Node)
		if err != nil {
			return err
		}
		stop = r.Pause
		cont = func() error {
			if !r.Running() {
				return nil // crashed meanwhile: nothing to resume
			}
			return r.Resume()
		}
	default:
		p, err := t.client(f.Client)
		if err != nil {
			return err
		}
		stop = func() error { return p.Signal(syscall.SIGSTOP) }
		cont = func() error {
			if p.Exited() {
				return nil
			}
			return p.Signal(syscall.SIGCONT)
		}
	}
	stopped, continued := stop, cont
	stop = func() error {
		f.signalled.Lock()
		defer f.signalled.Unlock()
		f.signalled.stop, f.signalled.cont = history.Monotonic(), 0
		return stopped()
	}
	cont = func() error {
		err := continued()
		f.signalled.Lock()
		defer f.signalled.Unlock()
		if f.signalled.cont == 0 {
			f.signalled.cont = history.Monotonic()
		}
		return err
	}
	return f.inject(ctx, func(add func(undoFunc)) error {
		if err := stop(); err != nil {
			return err
		}
		var timer *time.Timer
		if f.For > 0 {
			timer = time.AfterFunc(f.For, func() { _ = cont() })
		}
		add(func(context.Context) error {
			if timer != nil {
				timer.Stop()
			}
			// SIGCONT again even if the timer sent one: it is harmless.
			if err := cont(); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
			return nil
		})
		return nil
	})
}

func (f *Pause) Heal(ctx context.Context, t *Target) error { return f.heal(ctx) }

// PauseParams are a pause step's fields.
type PauseParams struct {
	ClientOrNode `yaml:",inline"`
	// For is how long the process stays stopped; not given: until a
	// resume step or the heal.
	For time.Duration `yaml:"for"`
}

func init() {
	Register(Spec[PauseParams]{Name: "pause", Doc: "SIGSTOP the client or the node; SIGCONT after `for`, or at resume or heal",
		Realistic: "any length up to minutes: stop-the-world GC pauses and a paused VM last seconds to minutes (Kleppmann, \"How to do distributed locking\", 2016, https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html, section \"Protecting a resource with a lock\")",
		Effect:    history.EffectPause,
		Check: func(p *PauseParams, _ Facts) *ParamError {
			return firstRefusal(p.exactlyOne("pause"), nonNegative("for", p.For))
		},
		New: func(p *PauseParams) Breaker { return &Pause{Client: p.Client, Node: p.Node, For: p.For} },
		Draw: &Draw[PauseParams]{
			Generated: Generated{Drawn: Drawn{Name: "pause", Doc: "length of the pause fault", What: "the pause", Range: [2]float64{0.2, 3}, Classic: 1.5},
				Outlasts: func(d time.Duration) time.Duration { return d }},
			Params: func(a Aim, x float64) PauseParams {
				return PauseParams{ClientOrNode: ClientOrNode{Client: a.Client}, For: time.Duration(x)}
			}}})
	Register(Spec[ClientOrNode]{Name: "resume", Doc: "SIGCONT the paused client or node",
		Check: func(p *ClientOrNode, _ Facts) *ParamError { return p.exactlyOne("resume") },
		Heals: func(p *ClientOrNode, f Breaker) bool {
			x, ok := f.(*Pause)
			return ok && x.Client == p.Client && x.Node == p.Node
		}})
}

func (f *Pause) Fields() history.FaultFields {
	return history.FaultFields{Client: f.Client, Node: f.Node, Size: int64(f.For), Lasts: int64(f.For)}
}
