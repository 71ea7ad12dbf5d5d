// kept.go keeps servers from one scripted run to the next (sim hunt
// plays hundreds of stories of one lock): a run given Options.Keep
// borrows the servers the last run left, put back as new, instead of
// starting its own; its clients, their proxies and their clocks are its
// own as ever. Starting PostgreSQL and the lock's servers is most of a
// short story's wall time.

package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"locksim/backends"
	"locksim/env"
)

// Kept are servers kept between runs. The zero value is not ready: use
// NewKept, and Close when done.
type Kept struct {
	mu sync.Mutex
	// shape is what the servers were started for (lock backends and
	// their options): a run that needs another shape gets new ones.
	shape   string
	dir     string
	network *env.Network
	servers []started
	pg      *env.Postgres
	// spoiled says why the servers cannot be put back for the next run
	// ("" when they can).
	spoiled string
	// Started and Reused count the runs that started servers and those
	// that borrowed kept ones; Restarts says why each restart was.
	Started, Reused int
	Restarts        []string
}

// NewKept returns an empty keeper.
func NewKept() *Kept { return &Kept{} }

// lend gives run r servers of its plan: the kept ones put back as new
// (every fault healed by the last run's teardown; each backend reset:
// keys flushed and clocks true; PostgreSQL's sessions ended and the
// storage's tables made afresh), or new ones when none are kept, when
// they were started for another shape, when the last run left them in a
// state a reset cannot undo, or when the reset fails.
func (k *Kept) lend(ctx context.Context, r *run, plan []backends.Backend) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	shape := fmt.Sprintf("%s %+v", r.host().Name, r.sc.ServerOptions())
	for _, b := range plan {
		shape += " " + string(b.Name()) + "=" + r.host().image(b)
	}
	why := k.spoiled
	if k.servers != nil && why == "" && k.shape != shape {
		why = "the story needs other servers"
	}
	if k.servers != nil && why == "" {
		if err := k.reset(ctx); err != nil {
			why = "putting them back failed: " + err.Error()
		}
	}
	if k.servers != nil && why != "" {
		k.Restarts = append(k.Restarts, why)
		k.close()
	}
	if k.servers == nil {
		dir, err := env.TempDir("locksim-kept-")
		if err != nil {
			return harness("temp dir: %v", err)
		}
		k.dir, k.network, k.shape, k.spoiled = dir, env.NewNetwork(), shape, ""
		servers, pg, err := r.startServers(ctx, plan, dir, k.network)
		if err != nil {
			k.close()
			return err
		}
		k.servers, k.pg = servers, pg
		k.Started++
	} else {
		k.Reused++
	}
	r.target.Network.Close() // the run's own, unused
	r.target.Network = k.network
	r.useServers(k.servers, k.pg)
	return nil
}

// reset puts the kept servers back as new, at once.
func (k *Kept) reset(ctx context.Context) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	do := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for _, s := range k.servers {
		do(func() error { return s.Reset(ctx) })
	}
	if k.pg != nil {
		// The clients are gone, but a session of theirs may linger with
		// an advisory lock: env.Postgres.Reset ends every session, then
		// makes the storage's tables afresh.
		do(func() error { return k.pg.Reset(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// giveBack takes the servers back from run r at its teardown (its
// faults healed, its clients stopped): its clients' links are removed,
// and a run that left them spoiled (a lasting fault, a failed run)
// has them started afresh for the next.
func (k *Kept) giveBack(r *run) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.network != nil {
		k.network.Remove(r.links...)
	}
	if r.lasting != "" {
		k.spoiled = r.lasting
	}
}

// close stops the kept servers and removes their files.
func (k *Kept) close() {
	closeAll(k.servers)
	if k.network != nil {
		k.network.Close()
	}
	if k.dir != "" {
		env.RemoveTempDir(k.dir)
	}
	k.servers, k.pg, k.network, k.dir = nil, nil, nil, ""
}

// Close stops the kept servers.
func (k *Kept) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.close()
}
