package clients

// redislock: github.com/bsm/redislock, a single-node Redis lock (SET NX
// PX with a random token, token-checked Lua release and refresh).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "redislock", Like: "redis", Backend: RedisBackend,
		Promises: redislockPromises,
		Doc:      "bsm/redislock on one Redis node (library defaults: no retry, random token)",
		New:      func(cfg Config) (Lock, error) { return NewRedislock(cfg) }})
}

// Redislock is a thin adapter over bsm/redislock on the first Redis node
// of its config. Obtain runs with the library's defaults, RetryStrategy
// NoRetry (try once) stated explicitly; the token is the library's own
// (16 random bytes, base64url).
//
// The lease: Token is lock.Token(), Fence 0, Nodes the one node, Validity
// the TTL itself counted from Start (a CLOCK_MONOTONIC reading taken just
// before the request, so before the server started the key's TTL):
// redislock has no drift allowance and no validity check of its own.
//
// A redislock.Lock cannot be rebuilt from its token (its key, value and
// token length are unexported), so the adapter keeps the locks it
// obtained, by token, until they are released or found gone. A lease this
// client did not obtain (another client's, or a forged one) is refused
// not-held without sending anything, as PGSession does.
//
// Every call is bounded by cfg.Timeout() (the node's client has the same
// timeouts), which also cuts short go-redis's dial retries (5 tries,
// 100ms apart, whatever MaxRetries says). With that deadline set, Obtain
// does not add its own (it bounds a call without one by the TTL).
//
// Errors: ErrNotObtained on Obtain -> refused, held; ErrLockNotHeld on
// Release and ErrNotObtained on Refresh -> refused, not-held; any other
// error (the node did not answer) is returned wrapped, an unknown
// outcome.
type Redislock struct {
	node    redisNode
	lc      *redislock.Client
	timeout time.Duration

	mu   sync.Mutex
	held map[string]*redislock.Lock // lease token -> the library's lock
}

// NewRedislock connects (lazily) to cfg's first Redis node through a
// NewRedisClient (per-request timeouts cfg.Timeout(), no retries).
func NewRedislock(cfg Config) (*Redislock, error) {
	if len(cfg.Servers[RedisBackend]) == 0 {
		return nil, errors.New("redislock: no Redis node configured")
	}
	n := cfg.Servers[RedisBackend][0]
	c := NewRedisClient(n.Addr, cfg.Timeout())
	return &Redislock{node: redisNode{name: n.Name, client: c}, lc: redislock.New(c), timeout: cfg.Timeout(),
		held: map[string]*redislock.Lock{}}, nil
}

// Acquire implements Lock: one Obtain.
func (r *Redislock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if ttl < time.Millisecond {
		return Lease{}, fmt.Errorf("redislock: ttl must be at least 1ms, got %v", ttl)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := Monotonic()
	lock, err := r.lc.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: redislock.NoRetry()})
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "node %s holds the key for another client", r.node.name)
	case err != nil:
		return Lease{}, fmt.Errorf("redislock acquire: %w", err)
	}
	l := Lease{Key: key, Token: lock.Token(), Start: start, Validity: ttl, Nodes: []string{r.node.name}}
	r.mu.Lock()
	r.held[l.Token] = lock
	r.mu.Unlock()
	return l, nil
}

// lock finds the library's lock for l.
func (r *Redislock) lock(l Lease) (*redislock.Lock, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lock, ok := r.held[l.Token]
	if !ok || lock.Key() != l.Key {
		return nil, Refuse(ErrNotHeld, history.ReasonNotHeld, "this client holds no lease %q on %s (nothing sent)", l.Token, l.Key)
	}
	return lock, nil
}

func (r *Redislock) forget(token string) {
	r.mu.Lock()
	delete(r.held, token)
	r.mu.Unlock()
}

// Release implements Lock: lock.Release.
func (r *Redislock) Release(ctx context.Context, l Lease) error {
	lock, err := r.lock(l)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	switch err := lock.Release(ctx); {
	case err == nil:
		r.forget(l.Token)
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		r.forget(l.Token)
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s does not hold this lease's token", r.node.name)
	default:
		return fmt.Errorf("redislock release: %w", err)
	}
}

// Extend implements Lock: lock.Refresh with ttl.
func (r *Redislock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl < time.Millisecond {
		return l, fmt.Errorf("redislock: ttl must be at least 1ms, got %v", ttl)
	}
	lock, err := r.lock(l)
	if err != nil {
		return l, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := Monotonic()
	switch err := lock.Refresh(ctx, ttl, nil); {
	case err == nil:
		l.Start, l.Validity = start, ttl
		return l, nil
	case errors.Is(err, redislock.ErrNotObtained):
		r.forget(l.Token)
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s does not hold this lease's token", r.node.name)
	default:
		return l, fmt.Errorf("redislock extend: %w", err)
	}
}

// Warm opens the connection (PING).
func (r *Redislock) Warm(ctx context.Context) error {
	return warmNodes(ctx, []redisNode{r.node})
}

// Close implements Lock.
func (r *Redislock) Close() error { return r.node.client.Close() }

var _ redislock.RedisClient = (*redis.Client)(nil)
