// faults.go injects a story's faults, records each, and heals them.

package runner

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
)

// inject records and injects a fault; it is healed by healAll.
func (r *run) inject(ctx context.Context, f nemesis.Fault) error {
	fields := f.Fields()
	e := r.rec.Add(history.Event{Type: history.Fault, Op: f.Name(), Target: f.On(), Detail: f.Detail(), Fault: &fields})
	r.faults = append(r.faults, f)
	if k, ok := nemesis.LookupKind(f.Name()); ok && k.Lasting != "" {
		r.lasting = f.Name() + ": " + k.Lasting
	}
	if stopsClient(fields) {
		// Until its heal, the client does not run on purpose (guard.go).
		if r.paused == nil {
			r.paused = map[int]spans{}
		}
		until := int64(math.MaxInt64)
		if fields.Lasts > 0 {
			until = r.rec.Base() + e.Time + fields.Lasts // it resumes by itself
		}
		from := e.Time
		if r.selfStopped != 0 {
			from = min(from, r.selfStopped) // it stopped itself at its anchor
		}
		r.paused[fields.Client] = append(r.paused[fields.Client], [2]int64{r.rec.Base() + from, until})
	}
	r.selfStopped = 0
	if err := f.Inject(ctx, r.target); err != nil {
		return err
	}
	r.say("  fault: %s on %s (%s)", f.Name(), f.On(), f.Detail())
	return nil
}

// stopsClient says whether a fault's recorded effect is to stop a
// client's process (a pause of a client, not of a node): the timing guard
// then does not count the client's stall against the run.
func stopsClient(f history.FaultFields) bool {
	return f.Effect == history.EffectPause && f.Client != 0 && f.Node == ""
}

// healAll heals every injected fault, newest first, and records each heal.
func (r *run) healAll(ctx context.Context) error {
	return r.heal(ctx, func(nemesis.Fault) bool { return true })
}

// heal heals the injected faults that match, newest first, and records
// each heal.
func (r *run) heal(ctx context.Context, match func(nemesis.Fault) bool) error {
	var errs []error
	var kept []nemesis.Fault
	for i := len(r.faults) - 1; i >= 0; i-- {
		f := r.faults[i]
		if !match(f) {
			kept = append([]nemesis.Fault{f}, kept...)
			continue
		}
		if err := f.Heal(ctx, r.target); err != nil {
			errs = append(errs, fmt.Errorf("heal %s on %s: %w", f.Name(), f.On(), err))
		}
		e := r.rec.Add(history.Event{Type: history.Heal, Op: f.Name(), Target: f.On()})
		if fields := f.Fields(); stopsClient(fields) {
			r.paused[fields.Client].end(r.rec.Base() + e.Time)
		}
	}
	r.faults = kept
	return errors.Join(errs...)
}
