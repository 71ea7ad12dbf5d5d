package clients

// goose: the session locker of github.com/pressly/goose/v3 (package
// lock), which a goose Provider takes around a migration run:
// pg_try_advisory_lock, tried again every 5 s, on a connection the run
// checks out of its *sql.DB.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/pressly/goose/v3/lock"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "goose", Like: "postgres-session", Backend: PostgresBackend, NoExpiry: true, LocalExtend: true,
		Promises: goosePromises,
		OneLock:  "goose's session locker takes the fixed advisory key 4097083626, one migration run at a time per database",
		Doc:      "pressly/goose v3.30.1's lock.NewPostgresSessionLocker (library defaults): pg_try_advisory_lock(4097083626) on a connection of the client's *sql.DB",
		New:      func(cfg Config) (Lock, error) { return NewGoose(cfg) }})
}

// errGooseTried and errGooseUntried are the causes of the deadline an
// acquire and a release give the library's locker: its retry loop
// returns the cause (context.Cause) when the deadline passes while it
// waits to try again, which it does only after the server said no.
var (
	errGooseTried   = errors.New("goose: pg_try_advisory_lock said false; the locker waits to try again")
	errGooseUntried = errors.New("goose: pg_advisory_unlock said false; the locker waits to try again")
)

// Goose is a thin adapter over goose's PostgreSQL session locker (read in
// its source at v3.30.1, lock/postgres.go and provider_run.go). What the
// library does:
//
//   - SessionLock(ctx, conn) runs SELECT pg_try_advisory_lock($1) on the
//     *sql.Conn it is given, and while the answer is false tries again
//     every 5 s, 60 times (5 minutes); SessionUnlock runs SELECT
//     pg_advisory_unlock($1) and while the answer is false tries again
//     every 2 s, 30 times, then fails ("failed to unlock session").
//   - The key is lock.DefaultLockID, 4097083626, for every caller (an
//     option changes it): the story's key names the lease, not the lock.
//     Every client of a story takes the same lock.
//   - A Provider checks a connection out of its *sql.DB for each run
//     (db.Conn), locks the session on it, and after the run unlocks it
//     and closes the *sql.Conn, which gives the connection back to the
//     pool.
//
// The adapter does as the Provider does: one *sql.DB per client, on
// pgx's database/sql driver (github.com/jackc/pgx/v5/stdlib) and the
// story's connection string; an acquire checks a connection out and
// calls SessionLock on it; a release calls SessionUnlock on it and
// closes it. The locker keeps the library's defaults. The harness's
// acquire tries once: SessionLock's context carries a deadline of the
// node timeout (cfg.Timeout(), 200 ms by default) whose cause is
// errGooseTried. When the first try says false, the locker waits 5 s for
// its next, the deadline passes first and the locker returns the cause:
// refused (held), after the node timeout. A try that did not answer in
// time fails with the driver's error wrapped: an unknown outcome. A
// release is bounded the same way: false is refused (not-held), the
// cause errGooseUntried; the library would keep asking for a minute.
//
// What the lease says: Token a random token of the adapter's, Fence 0,
// Validity 0 (a session lock). A lease this client does not hold is
// refused not-held, nothing sent. Extend sends nothing
// (Spec.LocalExtend).
type Goose struct {
	db      *sql.DB
	timeout time.Duration

	mu   sync.Mutex
	held map[string]*sql.Conn // lease token -> the run's connection
}

// newGooseLocker is the library's default session locker. Its retry
// policies count their tries for the locker's life (go-retry's
// WithMaxRetries), so each acquire and release gets a new one, as each
// run of a new Provider would.
func newGooseLocker() lock.SessionLocker {
	l, _ := lock.NewPostgresSessionLocker() // the defaults: no error
	return l
}

// NewGoose makes the adapter with the library's default locker; it
// connects on first use.
func NewGoose(cfg Config) (*Goose, error) {
	dsn, err := pgParse("goose", cfg)
	if err != nil {
		return nil, err
	}
	if _, err := lock.NewPostgresSessionLocker(); err != nil {
		return nil, fmt.Errorf("goose: %w", err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("goose: %w", err)
	}
	return &Goose{db: db, timeout: cfg.Timeout(), held: map[string]*sql.Conn{}}, nil
}

// Warm opens a connection of the pool before the story starts.
func (g *Goose) Warm(ctx context.Context) error {
	return g.db.PingContext(ctx)
}

// Acquire implements Lock: a connection of the pool and one try of the
// library's SessionLock on it; ttl is ignored.
func (g *Goose) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	start := Monotonic()
	tctx, cancel := context.WithTimeoutCause(ctx, g.timeout, errGooseTried)
	defer cancel()
	conn, err := g.db.Conn(tctx)
	if err != nil {
		return Lease{}, fmt.Errorf("goose acquire: a connection: %w", err)
	}
	err = newGooseLocker().SessionLock(tctx, conn)
	switch {
	case err == nil:
	case err == errGooseTried: // the cause itself, not a wrapped driver error
		_ = conn.Close()
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "pg_try_advisory_lock(%d) said false: another session holds the lock", lock.DefaultLockID)
	default:
		_ = conn.Close()
		return Lease{}, fmt.Errorf("goose acquire: %w", err)
	}
	l := Lease{Key: key, Token: NewToken(), Start: start}
	g.mu.Lock()
	g.held[l.Token] = conn
	g.mu.Unlock()
	return l, nil
}

// Release implements Lock: one try of the library's SessionUnlock on the
// lease's connection, which then goes back to the pool, as a Provider's
// run ends.
func (g *Goose) Release(ctx context.Context, l Lease) error {
	g.mu.Lock()
	conn, ok := g.held[l.Token]
	delete(g.held, l.Token)
	g.mu.Unlock()
	if !ok {
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "this client holds no lease %q (nothing sent)", l.Token)
	}
	defer conn.Close()
	tctx, cancel := context.WithTimeoutCause(ctx, g.timeout, errGooseUntried)
	defer cancel()
	switch err := newGooseLocker().SessionUnlock(tctx, conn); {
	case err == nil:
		return nil
	case err == errGooseUntried:
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "pg_advisory_unlock(%d) said false: this session does not hold the lock", lock.DefaultLockID)
	default:
		return fmt.Errorf("goose release: %w", err)
	}
}

// Extend sends nothing: the lease, if this client holds it.
func (g *Goose) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.held[l.Token]; !ok {
		return Lease{}, ErrNotHeld
	}
	return l, nil
}

// Close closes the held connections and the pool; the server frees the
// sessions' locks.
func (g *Goose) Close() error {
	g.mu.Lock()
	for t, c := range g.held {
		_ = c.Close()
		delete(g.held, t)
	}
	g.mu.Unlock()
	return g.db.Close()
}
