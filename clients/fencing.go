package clients

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/storage"
)

// The fencing-token sources a scenario's fence names, each on the servers
// of one backend (FenceBackend).
const (
	// FencePostgres draws from a PostgreSQL sequence (PGSequence).
	FencePostgres = "postgres"
	// FenceRedisIncr counts with INCR on the first Redis node (RedisIncr).
	FenceRedisIncr = "redis-incr"
	// FenceRedlockIncr counts with INCR on every Redis node that granted
	// the lock, the largest count (RedlockIncr).
	FenceRedlockIncr = "redlock-incr"
)

// FenceBackend is the backend whose servers the fence source counts on
// ("" for no source, or one unknown).
func FenceBackend(source string) Backend {
	switch source {
	case FencePostgres:
		return PostgresBackend
	case FenceRedisIncr, FenceRedlockIncr:
		return RedisBackend
	}
	return ""
}

// TokenSource hands out fencing tokens: each call returns a number larger
// than every number it returned before, as long as the source keeps its
// state.
type TokenSource interface {
	Next(ctx context.Context) (int64, error)
}

// PGSequence draws fencing tokens from the PostgreSQL sequence fence_seq
// (made by storage.Setup). A sequence never goes backwards, even across a
// server crash: it is WAL-logged ahead of the values it hands out.
type PGSequence struct {
	mu sync.Mutex
	c  pgConn
}

// NewPGSequence makes a sequence token source on dsn; it connects on
// first use.
func NewPGSequence(dsn string) (*PGSequence, error) {
	dsn, err := pgParse("fence sequence", Config{Postgres: dsn})
	if err != nil {
		return nil, err
	}
	return &PGSequence{c: pgConn{dsn: dsn}}, nil
}

// Next returns nextval('fence_seq').
func (s *PGSequence) Next(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, err := s.c.get(ctx)
	if err != nil {
		return 0, fmt.Errorf("fence sequence: %w", err)
	}
	var v int64
	if err := conn.QueryRow(ctx, storage.SQLNextFence).Scan(&v); err != nil {
		return 0, fmt.Errorf("fence sequence: %w", err)
	}
	return v, nil
}

// Close closes the connection.
func (s *PGSequence) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.close()
}

// RedisIncr draws fencing tokens from INCR on one Redis node. It is not
// safe across a restart without persistence (appendonly no): the node
// comes back without the counter, and INCR starts again from 1, below
// tokens already handed out. With appendfsync everysec a kill -9 loses
// nothing (the writes are in the OS page cache); an OS crash or a power
// loss can lose the last second. That is the point of the
// fenced-redis-incr-crash scenario.
type RedisIncr struct {
	client *redis.Client
	key    string
}

// DefaultFenceKey is the Redis key RedisIncr counts on when none is given.
const DefaultFenceKey = "locksim:fence"

// NewRedisIncr makes an INCR token source on the node at addr, counting on
// key ("" means DefaultFenceKey), each request bounded by timeout (0:
// 200ms, Config's default) and never retried.
func NewRedisIncr(addr, key string, timeout time.Duration) *RedisIncr {
	if key == "" {
		key = DefaultFenceKey
	}
	if timeout <= 0 {
		timeout = Config{}.Timeout()
	}
	return &RedisIncr{client: NewRedisClient(addr, timeout), key: key}
}

// Next returns INCR key.
func (r *RedisIncr) Next(ctx context.Context) (int64, error) {
	v, err := r.client.Incr(ctx, r.key).Result()
	if err != nil {
		return 0, fmt.Errorf("fence INCR %s: %w", r.key, err)
	}
	return v, nil
}

// Close closes the client.
func (r *RedisIncr) Close() error { return r.client.Close() }

// LeaseTokenSource is a TokenSource whose token depends on the lease it
// fences (which nodes granted it). Fenced calls NextFor when src has it.
type LeaseTokenSource interface {
	NextFor(ctx context.Context, l Lease) (int64, error)
}

// RedlockIncr draws a Redlock lease's fencing token from INCR on every
// node that granted it, and hands out the largest count: the counters
// Kleppmann says "would go out of sync" (Martin Kleppmann, "How to do
// distributed locking", 2016, section "Making the lock safe with
// fencing"). Any two majorities share a node, so the largest count rises
// as long as every node keeps its counter; a node that restarts without
// persistence forgets its count, and the next majority that includes it
// but not the nodes that remember can hand out a token already in use.
type RedlockIncr struct {
	nodes map[string]*redis.Client
	key   string
}

// NewRedlockIncr makes a per-node INCR token source on the nodes, each
// request bounded by timeout (0: 200ms, Config's default) and never retried.
func NewRedlockIncr(nodes []Node, key string, timeout time.Duration) *RedlockIncr {
	if key == "" {
		key = DefaultFenceKey
	}
	if timeout <= 0 {
		timeout = Config{}.Timeout()
	}
	r := &RedlockIncr{nodes: map[string]*redis.Client{}, key: key}
	for _, n := range nodes {
		r.nodes[n.Name] = NewRedisClient(n.Addr, timeout)
	}
	return r
}

// Next is NextFor a lease granted by every node.
func (r *RedlockIncr) Next(ctx context.Context) (int64, error) {
	var all Lease
	for name := range r.nodes {
		all.Nodes = append(all.Nodes, name)
	}
	return r.NextFor(ctx, all)
}

// NextFor runs INCR on each node that granted l and returns the largest
// count; it fails if no node answered.
func (r *RedlockIncr) NextFor(ctx context.Context, l Lease) (int64, error) {
	var best int64
	var errs []error
	for _, name := range l.Nodes {
		c, ok := r.nodes[name]
		if !ok {
			return 0, fmt.Errorf("fence INCR: lease granted by unknown node %s", name)
		}
		v, err := c.Incr(ctx, r.key).Result()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", name, err))
			continue
		}
		best = max(best, v)
	}
	if best == 0 {
		return 0, fmt.Errorf("fence INCR %s: no node answered: %v", r.key, errs)
	}
	return best, nil
}

// Close closes the clients.
func (r *RedlockIncr) Close() error {
	var err error
	for _, c := range r.nodes {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Fenced wraps a lock so that every granted lease carries a fencing token
// from src, drawn after the lock is granted (so tokens follow the order
// of grants as far as the lock itself is exclusive). If the token cannot
// be drawn, the lock is released again and Acquire fails. Extend keeps the
// lease's token. Close closes the lock and, if it has a Close method, src.
// When l is a TxHolder (postgres-xact) the wrapper is one too.
func Fenced(l Lock, src TokenSource) Lock {
	f := &fenced{inner: l, src: src}
	if _, ok := l.(TxHolder); ok {
		return &fencedTx{f}
	}
	return f
}

type fenced struct {
	inner Lock
	src   TokenSource
}

// fencedTx is a fenced TxHolder.
type fencedTx struct{ *fenced }

func (f *fencedTx) Tx() pgx.Tx { return f.inner.(TxHolder).Tx() }

// Unwrap returns the wrapped lock.
func (f *fenced) Unwrap() Lock { return f.inner }

func (f *fenced) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l, err := f.inner.Acquire(ctx, key, ttl)
	if err != nil {
		return l, err
	}
	var tok int64
	if ls, ok := f.src.(LeaseTokenSource); ok {
		tok, err = ls.NextFor(ctx, l)
	} else {
		tok, err = f.src.Next(ctx)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		rerr := f.inner.Release(rctx, l)
		cancel()
		if rerr != nil {
			return Lease{}, fmt.Errorf("fencing token: %w (and releasing the lock: %v)", err, rerr)
		}
		return Lease{}, fmt.Errorf("fencing token: %w (lock released)", err)
	}
	l.Fence = tok
	return l, nil
}

func (f *fenced) Release(ctx context.Context, l Lease) error { return f.inner.Release(ctx, l) }

func (f *fenced) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	nl, err := f.inner.Extend(ctx, l, ttl)
	if err != nil {
		return nl, err
	}
	nl.Fence = l.Fence
	return nl, nil
}

func (f *fenced) Close() error {
	err := f.inner.Close()
	if c, ok := f.src.(interface{ Close() error }); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
