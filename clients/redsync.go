package clients

// redsync: github.com/go-redsync/redsync/v4, the most used Go Redlock,
// driven through its go-redis v9 pool, one go-redis client per node.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"locksim/history"
)

func init() {
	Register(Spec{Name: "redsync", Backend: "redis", Nodes: 5,
		Doc: "go-redsync/redsync v4 (Redlock, library defaults, one try) over the scenario's Redis nodes",
		New: func(cfg Config) (Lock, error) { return NewRedsync(cfg) }})
}

// Redsync is a thin adapter over redsync's Mutex. The library keeps its
// own defaults (drift factor 0.01, timeout factor 0.05: each acquire's
// requests share a deadline of 5% of the TTL, random 16-byte base64
// values), except one: redsync.WithTries(1). The library's default is 32
// tries 50-250ms apart; the harness's acquire step means "try once", and a
// retry loop inside Acquire would hide every refusal a story asserts.
//
// What the library exposes, and so what the lease says:
//
//   - Token is the mutex's value, Fence 0.
//   - Validity is the library's own Until() (start + ttl - elapsed -
//     ttl*driftFactor, on Go's monotonic clock), counted from Start, a
//     CLOCK_MONOTONIC reading taken just before the call: a wall-clock
//     step does not move it.
//   - Nodes is empty on a granted lease: redsync does not say which nodes
//     granted it (so a story's granted_by claim cannot hold for it). On a
//     refused acquire it lists the nodes that granted, when the library's
//     error names every node that did not (it does, unless a majority
//     refused: then ErrTaken lists only those, and Nodes stays empty).
//
// Per-node timeouts: every node's client is a NewRedisClient with
// cfg.Timeout(); an acquire's requests are further bounded by the
// library's own deadline (5% of the TTL: 50ms for a 1s TTL), and a
// release's or an extend's by cfg.Timeout() for the whole call (the nodes
// are asked in parallel), which also cuts short go-redis's dial retries
// (5 tries, 100ms apart, whatever MaxRetries says).
//
// Every operation builds a fresh Mutex (WithValue(lease token) for release
// and extend), so the adapter keeps no state between calls and a lease
// from any client can be released or extended by its token, as with
// Redlock.
//
// Errors: redsync reports per node (ErrNodeTaken, RedisError,
// ErrLockAlreadyExpired, joined with errors.Join) or, when a majority said
// "someone else's", ErrTaken. A refusal is certain only when the nodes
// that answered decide it whatever the silent ones did; when the outcome
// hangs on nodes that failed to answer, the library's error is returned
// wrapped (an unknown outcome; ReasonOf says timeout when a node timed
// out):
//
//   - acquire: ErrTaken -> refused, held. A majority granted but too late
//     (ErrFailed, which with one try means exactly that, or a joined error
//     that leaves a majority granting) -> refused, validity; rare, as the
//     5% deadline turns a slow node into a silent one first. Fewer than a
//     majority granted even counting every silent node as a grant ->
//     refused, quorum (held when no node was silent; with an odd number of
//     nodes that is always ErrTaken). Otherwise unknown: a node that did
//     not answer in time may have set the key, and the library's undo
//     may not have reached it.
//   - release (Unlock) and extend (Extend): enough nodes answered that they
//     do not hold this lease's value (another value, or no key:
//     ErrLockAlreadyExpired) that no majority can still hold it ->
//     refused, not-held; a majority renewed but too late
//     (ErrExtendFailed) -> refused, not-held; otherwise unknown.
type Redsync struct {
	rs      *redsync.Redsync
	nodes   []redisNode
	quorum  int
	timeout time.Duration
}

// NewRedsync connects (lazily) to every node in cfg.Redis, each through a
// NewRedisClient (per-request timeouts cfg.Timeout(), no retries).
func NewRedsync(cfg Config) (*Redsync, error) {
	if len(cfg.Redis) == 0 {
		return nil, errors.New("redsync: no Redis nodes configured")
	}
	r := &Redsync{timeout: cfg.Timeout(), quorum: len(cfg.Redis)/2 + 1}
	var pools []redsyncredis.Pool
	for _, n := range cfg.Redis {
		c := NewRedisClient(n.Addr, r.timeout)
		r.nodes = append(r.nodes, redisNode{name: n.Name, client: c})
		pools = append(pools, goredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	return r, nil
}

// nodeOutcomes sorts a redsync error into the nodes it names: taken (the
// key holds another value, or, for extend, no key), expired (no key, on
// release), failed (no answer), and whether it is ErrTaken (a majority
// taken; the library then drops the other nodes' errors) or ErrFailed.
// other collects anything else.
type nodeOutcomes struct {
	taken, expired, failed []int
	errTaken, errFailed    bool
	other                  []error
}

func classify(err error) nodeOutcomes {
	var o nodeOutcomes
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *redsync.ErrTaken:
			o.errTaken = true
			o.taken = append(o.taken, e.Nodes...)
		case redsync.ErrTaken:
			o.errTaken = true
			o.taken = append(o.taken, e.Nodes...)
		case *redsync.ErrNodeTaken:
			o.taken = append(o.taken, e.Node)
		case redsync.ErrNodeTaken:
			o.taken = append(o.taken, e.Node)
		case *redsync.RedisError:
			o.failed = append(o.failed, e.Node)
		case redsync.RedisError:
			o.failed = append(o.failed, e.Node)
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
		default:
			switch {
			case err == redsync.ErrLockAlreadyExpired:
				// The library joins it without the node's number.
				o.expired = append(o.expired, -1)
			case err == redsync.ErrFailed:
				o.errFailed = true
			default:
				o.other = append(o.other, err)
			}
		}
	}
	walk(err)
	return o
}

// granted lists, in node order, the nodes not named in o: those that
// granted (or did what was asked). Only meaningful when o names every
// node that did not.
func (r *Redsync) granted(o nodeOutcomes) []string {
	named := map[int]bool{}
	for _, s := range [][]int{o.taken, o.failed} {
		for _, i := range s {
			named[i] = true
		}
	}
	var out []string
	for i, n := range r.nodes {
		if !named[i] {
			out = append(out, n.name)
		}
	}
	return out
}

func (r *Redsync) names(idx []int) []string {
	var out []string
	for _, i := range idx {
		if i >= 0 && i < len(r.nodes) {
			out = append(out, r.nodes[i].name)
		}
	}
	return out
}

// Acquire implements Lock: one try of redsync's LockContext.
func (r *Redsync) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("redsync: ttl must be positive, got %v", ttl)
	}
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	start := history.Monotonic()
	since := time.Now() // after start: Start+Validity never passes Until()
	err := m.LockContext(ctx)
	if err == nil {
		return Lease{Key: key, Token: m.Value(), Start: start, Validity: m.Until().Sub(since)}, nil
	}
	n := len(r.nodes)
	o := classify(err)
	switch {
	case len(o.other) > 0: // not a per-node answer (genValue failed)
		return Lease{}, fmt.Errorf("redsync acquire: %w", err)
	case o.errTaken:
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld,
			"nodes %v hold the key for another client (a majority): %v", r.names(o.taken), err)
	case o.errFailed && len(o.taken) == 0 && len(o.failed) == 0:
		all := r.granted(o)
		return Lease{Nodes: all}, Refuse(ErrNotAcquired, history.ReasonValidity,
			"all %d nodes granted, but the acquire took the whole %v TTL: no validity left (%v)", n, ttl, err)
	}
	granted := r.granted(o)
	switch g, silent := len(granted), len(o.failed); {
	case g >= r.quorum:
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonValidity,
			"%d of %d nodes granted %v, but too late: no validity left (%v)", g, n, granted, err)
	case g+silent < r.quorum && silent == 0:
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonHeld,
			"%d of %d nodes granted %v; the others hold the key (%v)", g, n, granted, err)
	case g+silent < r.quorum:
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonQuorum,
			"%d of %d nodes granted %v, %d did not answer: no majority whatever they did (%v)", g, n, granted, silent, err)
	default:
		return Lease{Nodes: granted}, fmt.Errorf("redsync acquire: %d of %d nodes granted %v and %d did not answer: the outcome hangs on them: %w",
			g, n, granted, silent, err)
	}
}

// notHeld decides a failed release or extend: a certain not-held when so
// many nodes answered that they do not hold the lease's value that no
// majority can still hold it, else (some nodes silent) an unknown outcome.
func (r *Redsync) notHeld(op string, o nodeOutcomes, err error) error {
	notOurs := len(o.taken) + len(o.expired)
	if len(o.other) == 0 && notOurs > len(r.nodes)-r.quorum {
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "%d of %d nodes do not hold this lease's value: %v", notOurs, len(r.nodes), err)
	}
	return fmt.Errorf("redsync %s: %d of %d nodes do not hold this lease's value, %d did not answer: %w",
		op, notOurs, len(r.nodes), len(o.failed), err)
}

// Release implements Lock: redsync's Unlock of a mutex carrying the
// lease's value.
func (r *Redsync) Release(ctx context.Context, l Lease) error {
	m := r.rs.NewMutex(l.Key, redsync.WithValue(l.Token))
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ok, err := m.UnlockContext(ctx)
	if ok {
		return nil
	}
	return r.notHeld("release", classify(err), err)
}

// Extend implements Lock: redsync's Extend of a mutex carrying the
// lease's value, with expiry ttl.
func (r *Redsync) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("redsync: ttl must be positive, got %v", ttl)
	}
	m := r.rs.NewMutex(l.Key, redsync.WithValue(l.Token), redsync.WithExpiry(ttl))
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := history.Monotonic()
	since := time.Now()
	ok, err := m.ExtendContext(ctx)
	if ok {
		l.Start, l.Validity, l.Nodes = start, m.Until().Sub(since), nil
		return l, nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) {
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "renewed on a majority, but too late: no validity left")
	}
	return l, r.notHeld("extend", classify(err), err)
}

// Warm opens a connection to every node (PING), as Redlock does.
func (r *Redsync) Warm(ctx context.Context) error {
	return warmNodes(ctx, r.nodes)
}

// Close implements Lock.
func (r *Redsync) Close() error {
	for _, n := range r.nodes {
		_ = n.client.Close()
	}
	return nil
}

// warmNodes PINGs every node, each within 2s.
func warmNodes(ctx context.Context, nodes []redisNode) error {
	var errs []error
	for _, n := range nodes {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := n.client.Ping(c).Err(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.name, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}
