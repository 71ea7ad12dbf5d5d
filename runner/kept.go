// kept.go keeps servers from one scripted run to the next (sim hunt
// plays hundreds of stories of one lock): a run given Options.Keep
// borrows the servers the last run left, put back as new, instead of
// starting its own; its clients, their proxies and their clocks are its
// own as ever. Starting PostgreSQL and the lock's servers is most of a
// short story's wall time.

package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/env"
)

// Kept are servers kept between runs, a set for each shape of servers
// the runs asked for (at most keptShapes: a hunt's candidates with and
// without replicas each keep theirs). The zero value is not ready: use
// NewKept, and Close when done.
type Kept struct {
	mu   sync.Mutex
	sets map[string]*keptSet
	// order lists the shapes, the least recently used first.
	order []string
	// Started and Reused count the runs that started servers and those
	// that borrowed kept ones; Restarts says why each restart was.
	Started, Reused int
	Restarts        []string
}

// keptShapes bounds the sets of servers kept at once.
const keptShapes = 3

// keptSet is one shape's servers.
type keptSet struct {
	dir     string
	network *env.Network
	servers []started
	pg      *env.Postgres
	// spoiled says why the servers cannot be put back for the next run
	// ("" when they can).
	spoiled string
}

// NewKept returns an empty keeper.
func NewKept() *Kept { return &Kept{sets: map[string]*keptSet{}} }

// lend gives run r servers of its plan: the kept ones of its shape (lock
// backends and their options) put back as new (every fault healed by the
// last run's teardown; each backend reset: keys flushed and clocks true;
// PostgreSQL's sessions ended and the storage's tables made afresh), or
// new ones when none of its shape are kept, when the last run left them
// in a state a reset cannot undo, or when the reset fails.
func (k *Kept) lend(ctx context.Context, r *run, plan []backends.Backend) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	shape := fmt.Sprintf("%s %+v", r.host().Name, r.sc.ServerOptions())
	for _, b := range plan {
		shape += " " + string(b.Name()) + "=" + r.host().image(b) + "@" + r.host().Versions[b.Name()]
	}
	set := k.sets[shape]
	if set != nil {
		why := set.spoiled
		if why == "" {
			if err := set.reset(ctx); err != nil {
				why = "putting them back failed: " + err.Error()
			}
		}
		if why != "" {
			k.Restarts = append(k.Restarts, why)
			k.drop(shape)
			set = nil
		}
	}
	if set == nil {
		if len(k.order) >= keptShapes {
			k.drop(k.order[0])
		}
		dir, err := env.TempDir("locksim-kept-")
		if err != nil {
			return harness("temp dir: %v", err)
		}
		set = &keptSet{dir: dir, network: env.NewNetwork()}
		servers, pg, err := r.startServers(ctx, plan, dir, set.network)
		if err != nil {
			set.close()
			return err
		}
		set.servers, set.pg = servers, pg
		k.sets[shape] = set
		k.Started++
	} else {
		k.Reused++
	}
	k.order = append(slices.DeleteFunc(k.order, func(s string) bool { return s == shape }), shape)
	r.keptShape = shape
	r.target.Network.Close() // the run's own, unused
	r.target.Network = set.network
	r.useServers(set.servers, set.pg)
	return nil
}

// drop stops one shape's servers and forgets them.
func (k *Kept) drop(shape string) {
	if set := k.sets[shape]; set != nil {
		set.close()
	}
	delete(k.sets, shape)
	k.order = slices.DeleteFunc(k.order, func(s string) bool { return s == shape })
}

// reset puts the set's servers back as new, at once. The clients are
// gone, but a session of theirs may linger with an advisory lock:
// env.Postgres.Reset ends every session, then makes the storage's
// tables afresh.
func (set *keptSet) reset(ctx context.Context) error {
	var resetPostgres func() error
	if set.pg != nil {
		resetPostgres = func() error { return set.pg.Reset(ctx) }
	}
	return resetServers(ctx, set.servers, resetPostgres)
}

// giveBack takes the servers back from run r at its teardown (its
// faults healed, its clients stopped): its clients' links are removed,
// and a run that left them spoiled (a lasting fault, a failed run)
// has them started afresh for the next.
func (k *Kept) giveBack(r *run) {
	k.mu.Lock()
	defer k.mu.Unlock()
	set := k.sets[r.keptShape]
	if set == nil {
		return
	}
	set.network.Remove(r.links...)
	if r.lasting != "" {
		set.spoiled = r.lasting
	}
}

// close stops the set's servers and removes their files.
func (set *keptSet) close() {
	closeAll(set.servers)
	set.network.Close()
	env.RemoveTempDir(set.dir)
}

// Close stops every kept server.
func (k *Kept) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for shape := range k.sets {
		k.drop(shape)
	}
}
