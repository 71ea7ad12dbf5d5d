package clients

// redsync: github.com/go-redsync/redsync/v4, the most used Go Redlock,
// driven through its go-redis v9 pool, one go-redis client per node.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "redsync", Like: "redlock", Backend: RedisBackend, Nodes: 5,
		Promises: redsyncPromises,
		Doc:      "go-redsync/redsync v4 (Redlock, library defaults, one try) over the scenario's Redis nodes",
		New:      func(cfg Config) (Lock, error) { return NewRedsync(cfg) }})
}

// Redsync is a thin adapter over redsync's Mutex. The library keeps its
// own algorithm and defaults (drift factor 0.01, timeout factor 0.05:
// each acquire's requests share a deadline of 5% of the TTL, random
// 16-byte base64 values, no shuffling, no fail-fast), except one:
// redsync.WithTries(1). The library's default is 32 tries 50-250ms apart;
// the harness's acquire step means "try once", and a retry loop inside
// Acquire would hide every refusal a story asserts.
//
// Which nodes said what: the library counts its nodes' answers but does
// not say which nodes granted (its errors name some of those that did
// not, and drop the rest when a majority refused). So each node's pool is
// wrapped (recordingPool): its connections pass every command to the
// go-redis v9 pool's connection unchanged and record, per operation, what
// the node answered to SET NX (acquire) and to the unlock or extend
// script (the library's own reading: 0, and -1 for "no key", are no;
// anything else yes), or that it did not answer (an error). Every
// operation builds a fresh Redsync over fresh wrappers (the go-redis
// clients are shared), so concurrent operations (a watchdog's extend, an
// acquire) never mix their records.
//
// What the lease says:
//
//   - Token is the mutex's value, Fence 0.
//   - Validity is the library's own Until() (start + ttl - elapsed -
//     ttl*driftFactor, on Go's monotonic clock), counted from Start, a
//     CLOCK_MONOTONIC reading taken just before the call: a wall-clock
//     step does not move it.
//   - Nodes lists, in node order, the nodes whose SET NX granted (on a
//     granted lease, and with a refusal or an unknown outcome: the worker
//     records them either way), or, on an extended lease, the nodes that
//     renewed it.
//
// Per-node timeouts: every node's client is a NewRedisClient with
// cfg.Timeout(); an acquire's requests are further bounded by the
// library's own deadline (5% of the TTL: 50ms for a 1s TTL), and a
// release's or an extend's by cfg.Timeout() for the whole call (the nodes
// are asked in parallel), which also cuts short go-redis's dial retries
// (5 tries, 100ms apart, whatever MaxRetries says).
//
// A lease from any client can be released or extended by its token
// (WithValue), as with Redlock: the adapter keeps no state between calls.
//
// Outcomes, from the recorded answers (N nodes, quorum Q = N/2+1). A
// refusal is certain only when the nodes that answered decide it whatever
// the silent ones did; when the outcome hangs on nodes that did not
// answer, the library's error is returned wrapped (an unknown outcome;
// ReasonOf says timeout when a node timed out):
//
//   - acquire: Q or more nodes answered that another client holds the key
//     (the library's ErrTaken) -> refused, held. Q or more granted but too
//     late (ErrFailed, which with one try means exactly that, or a joined
//     error that leaves a majority granting) -> refused, validity; rare,
//     as the 5% deadline turns a slow node into a silent one first. Fewer
//     than Q granted even counting every silent node as a grant ->
//     refused, quorum (held when no node was silent). Otherwise unknown:
//     a node that did not answer in time may have set the key, and the
//     library's undo may not have reached it.
//   - release (Unlock): the library's yes (Q nodes deleted) -> ok.
//     Otherwise, when so many nodes answered (deleted the key, or do not
//     hold this lease's value: another value or no key) that no majority
//     can still hold the value, the lock is certainly no longer held by
//     this lease: ok when any node deleted it, as Redlock's release
//     (scenario redlock-clock-jump's client 1 deletes on A and B, C holds
//     client 2's value, D and E are cut off), refused, not-held, when none
//     did; otherwise unknown.
//   - extend (Extend): the library's yes -> the renewed lease. A majority
//     renewed but too late (ErrExtendFailed) -> refused, not-held; so many
//     nodes answered that they do not hold the value that no majority can
//     have renewed -> refused, not-held; otherwise unknown.
type Redsync struct {
	nodes   []redisNode
	pools   []redsyncredis.Pool // the library's go-redis v9 pools, one per node
	quorum  int
	timeout time.Duration
}

// NewRedsync connects (lazily) to every Redis node in cfg, each through a
// NewRedisClient (per-request timeouts cfg.Timeout(), no retries).
func NewRedsync(cfg Config) (*Redsync, error) {
	if len(cfg.Servers[RedisBackend]) == 0 {
		return nil, errors.New("redsync: no Redis nodes configured")
	}
	r := &Redsync{timeout: cfg.Timeout(), quorum: len(cfg.Servers[RedisBackend])/2 + 1}
	for _, n := range cfg.Servers[RedisBackend] {
		c := NewRedisClient(n.Addr, r.timeout)
		r.nodes = append(r.nodes, redisNode{name: n.Name, client: c})
		r.pools = append(r.pools, goredis.NewPool(c))
	}
	return r, nil
}

// answer is what one node answered to one command.
type answer uint8

const (
	answerNone answer = iota // no answer (an error), or not asked
	answerNo                 // answered: not granted, not deleted, not renewed
	answerYes                // answered: granted, deleted, renewed
)

// answers records, for one operation, each node's answer to SET NX and
// to the unlock or extend script (an acquire's undo is an unlock: its
// answers land in script and are not read).
type answers struct {
	mu            sync.Mutex
	asked         bool
	setNX, script []answer
}

func (a *answers) record(to []answer, node int, ok bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = true
	switch {
	case err != nil:
		to[node] = answerNone
	case ok:
		to[node] = answerYes
	default:
		to[node] = answerNo
	}
}

// count returns how many nodes answered want in of.
func (a *answers) count(of []answer, want answer) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, x := range of {
		if x == want {
			n++
		}
	}
	return n
}

// recordingPool wraps one node's pool: its connections record what the
// node answered in rec.
type recordingPool struct {
	pool redsyncredis.Pool
	node int
	rec  *answers
}

func (p recordingPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	c, err := p.pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{Conn: c, node: p.node, rec: p.rec}, nil
}

// recordingConn passes every command on unchanged; SetNX and Eval also
// record the node's answer.
type recordingConn struct {
	redsyncredis.Conn
	node int
	rec  *answers
}

func (c recordingConn) SetNX(name string, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	c.rec.record(c.rec.setNX, c.node, ok, err)
	return ok, err
}

func (c recordingConn) Eval(script *redsyncredis.Script, keysAndArgs ...any) (any, error) {
	v, err := c.Conn.Eval(script, keysAndArgs...)
	// As the library reads its scripts' replies: 0 (not this value) and
	// -1 (unlock: no key) are no, anything else yes.
	c.rec.record(c.rec.script, c.node, v != int64(0) && v != int64(-1), err)
	return v, err
}

// mutex builds a Mutex over fresh recording wrappers of the nodes' pools,
// and the record its nodes' answers go to.
func (r *Redsync) mutex(key string, opts ...redsync.Option) (*redsync.Mutex, *answers) {
	rec := &answers{setNX: make([]answer, len(r.pools)), script: make([]answer, len(r.pools))}
	pools := make([]redsyncredis.Pool, len(r.pools))
	for i, p := range r.pools {
		pools[i] = recordingPool{pool: p, node: i, rec: rec}
	}
	return redsync.New(pools...).NewMutex(key, opts...), rec
}

// names lists, in node order, the nodes whose answer in of is want.
func (r *Redsync) names(rec *answers, of []answer, want answer) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for i, x := range of {
		if x == want {
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
	m, rec := r.mutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	start := Monotonic()
	since := time.Now() // after start: Start+Validity never passes Until()
	err := m.LockContext(ctx)
	granted := r.names(rec, rec.setNX, answerYes)
	if err == nil {
		return Lease{Key: key, Token: m.Value(), Start: start, Validity: m.Until().Sub(since), Nodes: granted}, nil
	}
	rec.mu.Lock()
	asked := rec.asked
	rec.mu.Unlock()
	if !asked { // no node was asked (genValue failed)
		return Lease{}, fmt.Errorf("redsync acquire: %w", err)
	}
	n := len(r.nodes)
	g, taken, silent := len(granted), rec.count(rec.setNX, answerNo), rec.count(rec.setNX, answerNone)
	switch {
	case taken >= r.quorum:
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonHeld,
			"nodes %v hold the key for another client (a majority): %v", r.names(rec, rec.setNX, answerNo), err)
	case g >= r.quorum:
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonValidity,
			"%d of %d nodes granted %v, but too late: no validity left of the %v TTL (%v)", g, n, granted, ttl, err)
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

// Release implements Lock: redsync's Unlock of a mutex carrying the
// lease's value.
func (r *Redsync) Release(ctx context.Context, l Lease) error {
	m, rec := r.mutex(l.Key, redsync.WithValue(l.Token))
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ok, err := m.UnlockContext(ctx)
	if ok {
		return nil
	}
	n := len(r.nodes)
	deleted, notOurs, silent := r.names(rec, rec.script, answerYes), rec.count(rec.script, answerNo), rec.count(rec.script, answerNone)
	switch {
	case len(deleted)+notOurs <= n-r.quorum:
		// The silent nodes could still hold the value on a majority.
		return fmt.Errorf("redsync release: deleted on %v, %d of %d nodes do not hold this lease's value, %d did not answer: %w",
			deleted, notOurs, n, silent, err)
	case len(deleted) > 0:
		// No majority can still hold the value, and this release
		// deleted it where it was: released.
		return nil
	}
	return Refuse(ErrNotHeld, history.ReasonNotHeld, "%d of %d nodes do not hold this lease's value (%d did not answer): %v", notOurs, n, silent, err)
}

// Extend implements Lock: redsync's Extend of a mutex carrying the
// lease's value, with expiry ttl.
func (r *Redsync) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return l, fmt.Errorf("redsync: ttl must be positive, got %v", ttl)
	}
	m, rec := r.mutex(l.Key, redsync.WithValue(l.Token), redsync.WithExpiry(ttl))
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := Monotonic()
	since := time.Now()
	ok, err := m.ExtendContext(ctx)
	renewed := r.names(rec, rec.script, answerYes)
	if ok {
		l.Start, l.Validity, l.Nodes = start, m.Until().Sub(since), renewed
		return l, nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) {
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "renewed on a majority %v, but too late: no validity left", renewed)
	}
	n := len(r.nodes)
	notOurs, silent := rec.count(rec.script, answerNo), rec.count(rec.script, answerNone)
	if notOurs > n-r.quorum {
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "%d of %d nodes do not hold this lease's value (renewed on %v, %d did not answer): %v",
			notOurs, n, renewed, silent, err)
	}
	return l, fmt.Errorf("redsync extend: renewed on %v, %d of %d nodes do not hold this lease's value, %d did not answer: %w",
		renewed, notOurs, n, silent, err)
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
