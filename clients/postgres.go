package clients

// PostgreSQL advisory locks (the PostgreSQL manual, "Advisory Locks"): a session lock on one dedicated
// connection, the same lock used through a connection pool that unlocks
// on another connection (the seed's pitfall, a leak), and a
// transaction-scoped lock whose protected write rides in the lock's own
// transaction.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresBackend is PostgreSQL: one server (a scenario's nodes do not
// count it), reached by the connection string Config.Postgres.
const PostgresBackend Backend = "postgres"

func init() {
	Register(Spec{Name: "postgres-session", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true, Waits: true,
		Promises: postgresSessionPromises,
		Doc:      "PostgreSQL pg_try_advisory_lock on one dedicated connection (pg_advisory_lock under lock_timeout when an acquire waits), pg_advisory_unlock on the same one",
		New:      func(cfg Config) (Lock, error) { return NewPGSession(cfg) }})
	Register(Spec{Name: "postgres-shared", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true, Mutant: "the lock's exclusive mode", MutantOf: "postgres-session",
		Doc: "pg_try_advisory_lock_shared by mistake: every session is granted the shared lock at once",
		New: func(cfg Config) (Lock, error) {
			s, err := NewPGSession(cfg)
			if err == nil {
				s.shared = true
			}
			return s, err
		}})
	Register(Spec{Name: "postgres-hashtext", Like: "postgres-session", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true,
		Promises: postgresHashtextPromises,
		Doc:      "PostgreSQL session lock keyed by hashtext(name), a 32-bit hash: unrelated names can share one lock",
		New: func(cfg Config) (Lock, error) {
			s, err := NewPGSession(cfg)
			if err == nil {
				s.hashtext = true
			}
			return s, err
		}})
	Register(Spec{Name: "postgres-pooled", Like: "postgres-session", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true,
		Promises: postgresPooledPromises,
		Doc:      "PostgreSQL session lock through a pool: unlock lands on another connection and is ignored (leaks)",
		New:      func(cfg Config) (Lock, error) { return NewPGPooled(cfg) }})
	Register(Spec{Name: "postgres-xact", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true,
		Promises: postgresXactPromises,
		Doc:      "PostgreSQL pg_try_advisory_xact_lock; the protected write runs in the lock's transaction, commit releases",
		New:      func(cfg Config) (Lock, error) { return NewPGXact(cfg) }})
	Register(Spec{Name: "postgres-xact-outside", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true, Mutant: "writing inside the lock's transaction", MutantOf: "postgres-xact",
		Doc: "pg_try_advisory_xact_lock, but the protected write runs on its own connection, outside the lock's transaction",
		New: func(cfg Config) (Lock, error) {
			x, err := NewPGXact(cfg)
			return pgXactOutside{x}, err
		}})
}

// pgXactOutside is PGXact without Tx: the worker writes on the storage's
// own connection, so the write no longer dies with the lock's session.
type pgXactOutside struct{ x *PGXact }

func (o pgXactOutside) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return o.x.Acquire(ctx, key, ttl)
}
func (o pgXactOutside) Release(ctx context.Context, l Lease) error { return o.x.Release(ctx, l) }
func (o pgXactOutside) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return o.x.Extend(ctx, l, ttl)
}
func (o pgXactOutside) Close() error { return o.x.Close() }

// AdvisoryKey maps a lock name to a PostgreSQL advisory lock key: the first
// 8 bytes of SHA-256(name), big-endian, as an int64. Every client computes
// the same key from the same name with no shared table of ids (the seed's
// rule: the key must be deterministic), and a stable hash rather than
// Go's map hash or hash/maphash keeps it equal across processes and
// versions. Collisions are rare (birthday bound n^2/2^65: about 3e-8 for
// a million names), and two names that do collide share one lock: never
// two holders of one job, but under try-lock-and-skip a colliding
// unrelated job is skipped while the other runs.
func AdvisoryKey(name string) int64 {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// TxHolder is implemented by locks whose lease is a database transaction
// (postgres-xact): the protected write must run in Tx() so that it commits
// together with the release, and is rolled back if the lock is lost with
// the connection. Tx is nil when no lease is held.
type TxHolder interface {
	Tx() pgx.Tx
}

func pgParse(name string, cfg Config) (string, error) {
	if cfg.Postgres == "" {
		return "", fmt.Errorf("%s: no PostgreSQL connection string configured", name)
	}
	if _, err := pgx.ParseConfig(cfg.Postgres); err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	return cfg.Postgres, nil
}

// pgConn is one dedicated connection, reopened lazily after it broke.
// Each new connection is a new session, with a new generation number: a
// lease records the generation it was granted on, and a lease from an
// older generation lost its session lock with its session.
type pgConn struct {
	dsn  string
	conn *pgx.Conn
	gen  uint64
}

// get returns a live connection, connecting if needed. Callers hold the
// lock's mutex.
func (c *pgConn) get(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	c.gen++
	return conn, nil
}

// alive reports whether the connection of generation gen is still open as
// far as this client knows (a silent partition is not known until the
// next request).
func (c *pgConn) alive(gen uint64) bool {
	return c.conn != nil && !c.conn.IsClosed() && c.gen == gen
}

func (c *pgConn) close() error {
	if c.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.conn.Close(ctx)
	c.conn = nil
	return err
}

// tryLock runs one pg_try_advisory_lock-style query that returns a bool.
// Any failure, a broken connection included, is an error: the outcome is
// unknown, though pgx closes a connection whose request failed mid-way,
// and the server frees a closed session's locks.
func tryLock(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, key any) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, sql, key).Scan(&ok); err != nil {
		return false, err
	}
	return ok, nil
}

// PGSession is the seed's lock done right: pg_try_advisory_lock and
// pg_advisory_unlock on one dedicated connection. The lease has no expiry
// (Validity 0): it lasts as long as the session, which the server ends
// when the connection closes, when idle_session_timeout fires, or when
// TCP keepalive gives up; the client learns of it only on its next
// request. Session locks are reentrant: acquiring a key this client
// already holds succeeds again (and then needs two unlocks), as in
// PostgreSQL itself.
type PGSession struct {
	mu   sync.Mutex
	c    pgConn
	held map[string]uint64 // lease token -> connection generation
	// shared takes the shared advisory lock (a mutant): it excludes
	// only exclusive holders, so two shared holders both get it.
	shared bool
	// hashtext keys the lock by PostgreSQL's hashtext(name), a 32-bit
	// hash, as much code does, instead of AdvisoryKey's 64 bits: among
	// 100,000 names, a collision is more likely than not.
	hashtext bool
}

// lockSQL wraps an advisory lock function's call with this lock's key
// expression, and gives the key argument.
func (p *PGSession) lockSQL(fn, key string) (string, any) {
	if p.shared {
		fn += "_shared"
	}
	if p.hashtext {
		return "SELECT " + fn + "(hashtext($1))", key
	}
	return "SELECT " + fn + "($1)", AdvisoryKey(key)
}

// NewPGSession makes a session lock client; it connects on first use.
func NewPGSession(cfg Config) (*PGSession, error) {
	dsn, err := pgParse("postgres-session", cfg)
	if err != nil {
		return nil, err
	}
	return &PGSession{c: pgConn{dsn: dsn}, held: map[string]uint64{}}, nil
}

// Acquire runs pg_try_advisory_lock on AdvisoryKey(key) (or hashtext(key));
// ttl is ignored.
func (p *PGSession) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return p.acquire(ctx, key, func(conn *pgx.Conn) error {
		sql, arg := p.lockSQL("pg_try_advisory_lock", key)
		ok, err := tryLock(ctx, conn, sql, arg)
		if err == nil && !ok {
			return ErrNotAcquired
		}
		return err
	})
}

// AcquireWait runs pg_advisory_lock, the acquire that waits while
// another session holds the key, under lock_timeout = wait: granted the
// moment the holder unlocks, refused (held) when the wait runs out
// (SQLSTATE 55P03, lock_not_available); ttl is ignored.
func (p *PGSession) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return p.acquire(ctx, key, func(conn *pgx.Conn) error {
		timeout := max(wait.Milliseconds(), 1) // 0 would wait for ever
		if _, err := conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, false)", strconv.FormatInt(timeout, 10)+"ms"); err != nil {
			return err
		}
		sql, arg := p.lockSQL("pg_advisory_lock", key)
		_, err := conn.Exec(ctx, sql, arg)
		if _, rerr := conn.Exec(ctx, "RESET lock_timeout"); rerr != nil && err == nil {
			err = rerr
		}
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return fmt.Errorf("after waiting %v: %w", wait, ErrNotAcquired)
		}
		return err
	})
}

// acquire takes key by lock on the session's connection (opened if it
// is not) and, when lock grants it, records the lease on that
// connection. A refusal (ErrNotAcquired) comes back as lock says it;
// other errors are the acquire's.
func (p *PGSession) acquire(ctx context.Context, key string, lock func(*pgx.Conn) error) (Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := Monotonic()
	conn, err := p.c.get(ctx)
	if err == nil {
		err = lock(conn)
	}
	switch {
	case errors.Is(err, ErrNotAcquired):
		return Lease{}, err
	case err != nil:
		return Lease{}, fmt.Errorf("postgres-session acquire: %w", err)
	}
	l := Lease{Key: key, Token: NewToken(), Start: start}
	p.held[l.Token] = p.c.gen
	return l, nil
}

// Release runs pg_advisory_unlock on the connection that took the lock.
// It returns ErrNotHeld when the server says this session does not hold
// it, and an error when the session the lease was granted on is gone or
// the request failed.
func (p *PGSession) Release(ctx context.Context, l Lease) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen, ok := p.held[l.Token]
	if !ok {
		return ErrNotHeld
	}
	delete(p.held, l.Token)
	if !p.c.alive(gen) {
		return errors.New("postgres-session release: the connection that took the lock is closed (the server frees a closed session's locks once it notices)")
	}
	sql, arg := p.lockSQL("pg_advisory_unlock", l.Key)
	ok, err := tryLock(ctx, p.c.conn, sql, arg)
	if err != nil {
		return fmt.Errorf("postgres-session release: %w", err)
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}

// Extend does nothing (a session lock has no expiry) and returns the
// lease, unless this client already knows the lease's connection is
// closed. It sends nothing, so a connection that broke silently is only
// found out by the next request.
func (p *PGSession) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gen, ok := p.held[l.Token]
	if !ok {
		return Lease{}, ErrNotHeld
	}
	if !p.c.alive(gen) {
		return Lease{}, errors.New("postgres-session extend: the connection that took the lock is closed")
	}
	return l, nil
}

// Close closes the connection; the server then frees its locks.
func (p *PGSession) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c.close()
}

// pooledSize is how many connections the pool of postgres-pooled keeps.
const pooledSize = 4

// PGPooled reproduces the pooled-connection pitfall: application code that takes a
// session advisory lock through a connection pool, one query to lock and
// another to unlock, each checking out whatever pooled connection is free.
// Here the pool is deterministic: the lock is always taken on pooled
// connection #1 and the unlock always lands on connection #2, which does
// not hold it. pg_advisory_unlock then returns false (with a WARNING the
// application never sees) and, like the buggy code in the seed, this
// client ignores that result and reports the release as done. The lock
// leaks: it stays held by connection #1's session, which the pool keeps
// open, so no other client can take it until this client's pool is
// closed or the session ends. (Being a session lock, it is reentrant:
// this same client can take it again on connection #1, and that makes the
// leak look like success from the inside.) It is a liveness bug, not a
// safety one: the scenario's verdict is "leaked".
//
// The pool is a fixed set of pgx connections rather than pgxpool, so that
// which connection serves which query is a fact of the scenario, not of
// the pool's scheduling.
type PGPooled struct {
	mu    sync.Mutex
	conns [pooledSize]pgConn
}

// NewPGPooled makes the pooled (leaking) lock client; connections open on
// first use.
func NewPGPooled(cfg Config) (*PGPooled, error) {
	dsn, err := pgParse("postgres-pooled", cfg)
	if err != nil {
		return nil, err
	}
	p := &PGPooled{}
	for i := range p.conns {
		p.conns[i].dsn = dsn
	}
	return p, nil
}

// Acquire runs pg_try_advisory_lock on pooled connection #1.
func (p *PGPooled) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := Monotonic()
	conn, err := p.conns[0].get(ctx)
	if err != nil {
		return Lease{}, fmt.Errorf("postgres-pooled acquire: %w", err)
	}
	ok, err := tryLock(ctx, conn, `SELECT pg_try_advisory_lock($1)`, AdvisoryKey(key))
	if err != nil {
		return Lease{}, fmt.Errorf("postgres-pooled acquire: %w", err)
	}
	if !ok {
		return Lease{}, ErrNotAcquired
	}
	return Lease{Key: key, Token: NewToken(), Start: start}, nil
}

// Release runs pg_advisory_unlock on pooled connection #2, and ignores
// its false: THE BUG (see PGPooled). A failed request is still an error.
func (p *PGPooled) Release(ctx context.Context, l Lease) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.conns[1].get(ctx)
	if err != nil {
		return fmt.Errorf("postgres-pooled release: %w", err)
	}
	if _, err := tryLock(ctx, conn, `SELECT pg_advisory_unlock($1)`, AdvisoryKey(l.Key)); err != nil {
		return fmt.Errorf("postgres-pooled release: %w", err)
	}
	return nil // unlocked == false ignored, as in the seed's code
}

// Extend does nothing and returns the lease.
func (p *PGPooled) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return l, nil
}

// Close closes every pooled connection, which at last frees the leaked
// lock.
func (p *PGPooled) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for i := range p.conns {
		if err := p.conns[i].close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PGXact is the transaction-scoped advisory lock: Acquire begins a
// transaction and runs pg_try_advisory_xact_lock in it; the protected
// write must run in that same transaction (see TxHolder); Release
// commits, which frees the lock. If the connection is lost, the server
// rolls the transaction back and frees the lock at once, so the write
// and the lock go together: no write can land after the lock is gone.
// The price is that the write is durable only when Release (the commit)
// succeeds: a write that the storage accepted inside the transaction is
// not yet a write that happened. At most one lease at a time.
type PGXact struct {
	mu    sync.Mutex
	c     pgConn
	tx    pgx.Tx
	token string
}

// NewPGXact makes the transaction lock client; it connects on first use.
func NewPGXact(cfg Config) (*PGXact, error) {
	dsn, err := pgParse("postgres-xact", cfg)
	if err != nil {
		return nil, err
	}
	return &PGXact{c: pgConn{dsn: dsn}}, nil
}

// Tx is the held lease's transaction, nil when none is held.
func (x *PGXact) Tx() pgx.Tx {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.tx
}

// Acquire begins a transaction and runs pg_try_advisory_xact_lock in it;
// when the lock is not granted the transaction is rolled back.
func (x *PGXact) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tx != nil {
		return Lease{}, errors.New("postgres-xact acquire: a lease is already held (release it first)")
	}
	start := Monotonic()
	conn, err := x.c.get(ctx)
	if err != nil {
		return Lease{}, fmt.Errorf("postgres-xact acquire: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return Lease{}, fmt.Errorf("postgres-xact acquire: %w", err)
	}
	ok, err := tryLock(ctx, tx, `SELECT pg_try_advisory_xact_lock($1)`, AdvisoryKey(key))
	if err != nil || !ok {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = tx.Rollback(rctx)
		cancel()
		if err != nil {
			return Lease{}, fmt.Errorf("postgres-xact acquire: %w", err)
		}
		return Lease{}, ErrNotAcquired
	}
	x.tx = tx
	x.token = NewToken()
	return Lease{Key: key, Token: x.token, Start: start}, nil
}

// Release commits the lease's transaction, which frees the lock. An error
// means the commit did not certainly happen (pgx.ErrTxCommitRollback: it
// was rolled back, after a failed statement; anything else: unknown);
// the transaction is over, and the lock freed, either way.
func (x *PGXact) Release(ctx context.Context, l Lease) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tx == nil || l.Token != x.token {
		return ErrNotHeld
	}
	tx := x.tx
	x.tx, x.token = nil, ""
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres-xact release: commit: %w", err)
	}
	return nil
}

// Extend does nothing and returns the lease, unless this client already
// knows its transaction's connection is closed.
func (x *PGXact) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tx == nil || l.Token != x.token {
		return Lease{}, ErrNotHeld
	}
	if x.c.conn == nil || x.c.conn.IsClosed() {
		return Lease{}, errors.New("postgres-xact extend: the transaction's connection is closed")
	}
	return l, nil
}

// Close rolls back any open transaction and closes the connection.
func (x *PGXact) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tx != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = x.tx.Rollback(ctx)
		cancel()
		x.tx, x.token = nil, ""
	}
	return x.c.close()
}
