// Package storage is the protected resource of a run: one counter row in
// PostgreSQL that clients read-modify-write while they believe they hold
// the lock. Its modes are the defences the Redlock debate argues about: none
// (plain), a fencing token (fenced), antirez's check-and-set on the lease's
// random token (token-cas), and an idempotency constraint (idempotent).
//
// A refusal (accepted == false with a nil error) is always the storage's
// own decision, read from the statement's result; a broken connection or
// any other failure is an error, whose outcome the caller must treat as
// unknown.
package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Mode says how the storage guards writes.
type Mode string

const (
	// Plain writes whatever value it is given: read counter, write counter+1.
	Plain Mode = "plain"
	// Fenced writes only with a fencing token at least the last one seen:
	// UPDATE ... WHERE fence <= $fence (Kleppmann's fencing).
	Fenced Mode = "fenced"
	// FencedWrite checks the fencing token at the write only, as Fenced
	// does, but its read does not raise the fence: the mutant of
	// ReadFenced, and how locksim's fenced storage first worked. In a
	// read-modify-write a stale holder's write that lands between the new
	// holder's read and its write still carries the highest token the
	// storage has seen, so both writes are accepted.
	FencedWrite Mode = "fenced-write"
	// TokenCAS is antirez's answer to fencing: Claim records the lease's
	// random token on the row at the start of the critical section, and a
	// write succeeds only while the row still carries that token.
	TokenCAS Mode = "token-cas"
	// Idempotent records each run as (job, period) under a unique
	// constraint, in the same transaction as the counter update: a second
	// run of the same period is refused and the counter is untouched.
	Idempotent Mode = "idempotent"
)

// Modes lists the valid modes.
func Modes() []Mode { return []Mode{Plain, Fenced, FencedWrite, TokenCAS, Idempotent} }

// ParseMode checks a mode name ("" means plain).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Plain, nil
	}
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown storage mode %q (known: %v)", s, Modes())
}

// Setup (re)creates the tables, dropping any previous state:
// counter(id, value, fence, owner) with the one row id=1, value 0, fence 0;
// runs(job, period) unique; jobs(job, period, client), the job table a
// run of a scheduled job writes its first row to (RecordJob), with no
// constraint, so that a job run twice shows as two rows; and the sequence fence_seq that the PostgreSQL
// fencing-token source draws from.
func Setup(ctx context.Context, dsn string) error {
	return script(ctx, dsn, "setup", `
DROP TABLE IF EXISTS counter, runs, jobs, job_keys;
DROP SEQUENCE IF EXISTS fence_seq;
`+Schema)
}

// Reset puts back the state Setup leaves (value 0, fence 0, no owner, no
// runs, no jobs, the fence sequence's next value 1) without dropping anything:
// generator trials reset the storage before every trial, and a DROP and
// CREATE each time would make every client's first statement of a trial
// meet a table it has never seen (its prepared statements refer to the
// old one). Not measured to matter on its own: on a loaded machine the
// first write of a trial still took up to 888ms after it, which is the
// machine's, not the storage's (runner.unattributed).
func Reset(ctx context.Context, dsn string) error {
	return script(ctx, dsn, "reset", resetSQL)
}

// resetSQL puts back the state Setup leaves (Reset).
const resetSQL = `
UPDATE counter SET value = 0, fence = 0, owner = NULL WHERE id = 1;
DELETE FROM runs;
DELETE FROM jobs;
DELETE FROM job_keys;
SELECT setval('fence_seq', 1, false);
`

// Resetter resets the storage (Reset) on a connection it keeps from one
// reset to the next, for generator trials, which reset before each
// trial: a new session's start-up (a fork, authentication, a cold
// catalogue cache) took over 5 s on a machine loaded past its cores,
// and failed the sweep. A reset that fails on the kept connection is
// tried once more on a new one. Close ends it.
type Resetter struct {
	dsn  string
	conn *pgx.Conn
}

// NewResetter is a Resetter of the storage at dsn; it connects at its
// first Reset.
func NewResetter(dsn string) *Resetter { return &Resetter{dsn: dsn} }

// Reset is Reset, on the kept connection.
func (r *Resetter) Reset(ctx context.Context) error {
	var err error
	for try := 0; try < 2; try++ {
		if r.conn == nil {
			if r.conn, err = pgx.Connect(ctx, r.dsn); err != nil {
				continue
			}
		}
		if _, err = r.conn.Exec(ctx, resetSQL); err == nil {
			return nil
		}
		r.Close()
	}
	return fmt.Errorf("storage reset: %v", err)
}

// Close ends the kept connection.
func (r *Resetter) Close() {
	if r.conn != nil {
		r.conn.Close(context.Background())
		r.conn = nil
	}
}

// script runs sql on a connection of its own: one simple-protocol round
// trip runs the whole script in one implicit transaction.
func script(ctx context.Context, dsn, what, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("storage %s: %v", what, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("storage %s: %v", what, err)
	}
	return nil
}

// querier is what both a connection and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store is one client's handle on the protected counter. It is safe for
// concurrent use, though a client normally uses it from one goroutine.
type Store struct {
	// Job names the job in idempotent mode's runs table ("counter" by
	// default).
	Job string
	// JobOnce makes RecordJob's row idempotent: written only by the first
	// run of its period (SQLJobOnce).
	JobOnce bool

	mode Mode
	dsn  string
	mu   *sync.Mutex
	conn **pgx.Conn
	tx   pgx.Tx // set on a WithTx view
}

// Open connects to the storage at dsn (normally through the client's own
// proxy, so that network faults reach the storage link too).
func Open(ctx context.Context, dsn string, mode Mode) (*Store, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if mode == "" {
		mode = Plain
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: %v", err)
	}
	return &Store{Job: "counter", mode: mode, dsn: dsn, mu: &sync.Mutex{}, conn: &conn}, nil
}

// Mode is the store's mode.
func (s *Store) Mode() Mode { return s.mode }

// WithTx returns a view of the store whose Read, Claim and Write run
// inside tx, the transaction of a postgres-xact lock: then the write
// commits (and the lock goes) together, or not at all. The view shares
// the store's mode; closing it does nothing.
func (s *Store) WithTx(tx pgx.Tx) *Store {
	v := *s
	v.tx = tx
	return &v
}

// q returns what to run statements on, and the function that ends that use.
func (s *Store) q(ctx context.Context) (querier, func(), error) {
	if s.tx != nil {
		return s.tx, func() {}, nil
	}
	s.mu.Lock()
	if *s.conn == nil || (*s.conn).IsClosed() {
		// The previous connection broke (its error was returned then);
		// a new one is a new session.
		c, err := pgx.Connect(ctx, s.dsn)
		if err != nil {
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("storage: %v", err)
		}
		*s.conn = c
	}
	return *s.conn, s.mu.Unlock, nil
}

// Read returns the counter's value.
func (s *Store) Read(ctx context.Context) (int64, error) {
	q, done, err := s.q(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	var v int64
	if err := q.QueryRow(ctx, SQLRead).Scan(&v); err != nil {
		return 0, fmt.Errorf("storage read: %v", err)
	}
	return v, nil
}

// ReadFenced is the read of a critical section holding fencing token
// fence. In fenced mode the read raises the row's fence to fence, so that
// from now on a holder with a lower token cannot write: fencing the write
// alone is not enough for a read-modify-write, because a stale holder's
// write could land between the new holder's read and its write, and both
// would be accepted (FencedWrite is that mistake). In the other modes it
// is Read.
func (s *Store) ReadFenced(ctx context.Context, fence int64) (int64, error) {
	if s.mode != Fenced || fence == 0 {
		return s.Read(ctx)
	}
	q, done, err := s.q(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	var v int64
	if err := q.QueryRow(ctx, SQLFencedRead, fence).Scan(&v); err != nil {
		return 0, fmt.Errorf("storage read: %v", err)
	}
	return v, nil
}

// Value is the counter's final value, read outside any lock transaction.
func (s *Store) Value(ctx context.Context) (int64, error) {
	v := *s
	v.tx = nil
	return v.Read(ctx)
}

// Claim records token as the row's owner, at the start of the critical
// section (token-cas mode; a no-op in the others). It is unconditional:
// the claimer believes it holds the lock, and any earlier holder's
// writes are refused from now on.
func (s *Store) Claim(ctx context.Context, token string) error {
	if s.mode != TokenCAS {
		return nil
	}
	if token == "" {
		return errors.New("storage claim: empty token")
	}
	q, done, err := s.q(ctx)
	if err != nil {
		return err
	}
	defer done()
	tag, err := q.Exec(ctx, SQLClaim, token)
	if err != nil {
		return fmt.Errorf("storage claim: %v", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("storage claim: counter row missing (run storage.Setup)")
	}
	return nil
}

// Write stores value, the result of a read-modify-write that read `read`,
// as the mode allows:
//   - plain: always;
//   - fenced (and fenced-write): only if fence is at least the row's
//     fence, which becomes fence;
//   - token-cas: only while the row's owner is token (see Claim);
//   - idempotent: only if no run of (Job, period) is recorded, where the
//     period is the value read: each increment of the counter is one
//     scheduled period, and two runs that read the same value are the
//     same period run twice.
//
// It returns (false, nil) when the storage refused the write, and an error
// when it could not tell (the write may or may not have taken effect).
func (s *Store) Write(ctx context.Context, read, value int64, fence int64, token string) (accepted bool, err error) {
	q, done, err := s.q(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	var tag pgconn.CommandTag
	switch s.mode {
	case Plain:
		tag, err = q.Exec(ctx, SQLWrite, value)
	case Fenced, FencedWrite:
		tag, err = q.Exec(ctx, SQLFencedWrite, value, fence)
	case TokenCAS:
		tag, err = q.Exec(ctx, SQLTokenWrite, value, token)
	case Idempotent:
		return s.writeOnce(ctx, q, read, value)
	default:
		return false, fmt.Errorf("storage: unknown mode %q", s.mode)
	}
	if err != nil {
		return false, fmt.Errorf("storage write: %v", err)
	}
	switch tag.RowsAffected() {
	case 1:
		return true, nil
	case 0:
		if s.mode == Plain {
			return false, fmt.Errorf("storage write: counter row missing (run storage.Setup)")
		}
		return false, nil // the WHERE clause refused it
	default:
		return false, fmt.Errorf("storage write: %d rows updated", tag.RowsAffected())
	}
}

// writeOnce is idempotent mode's write: the run record and the counter
// update commit together (on a WithTx view, as a savepoint inside the
// lock's transaction).
func (s *Store) writeOnce(ctx context.Context, q querier, read, value int64) (bool, error) {
	tx, err := q.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("storage write: %v", err)
	}
	defer tx.Rollback(context.Background()) // no-op after Commit
	// ON CONFLICT DO NOTHING: a concurrent run of the same period waits
	// for the first to commit, then inserts nothing.
	tag, err := tx.Exec(ctx, SQLRunClaim,
		s.Job, strconv.FormatInt(read, 10))
	if err != nil {
		return false, fmt.Errorf("storage write: %v", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil // a duplicate (job, period): refused
	}
	tag, err = tx.Exec(ctx, SQLWrite, value)
	if err != nil {
		return false, fmt.Errorf("storage write: %v", err)
	}
	if tag.RowsAffected() != 1 {
		return false, fmt.Errorf("storage write: counter row missing (run storage.Setup)")
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("storage write: commit: %v", err)
	}
	return true, nil
}

// RecordJob writes the first effect of client's run of the store's job
// (Job) for a schedule period: a row of the job table, with no constraint
// (whatever the run does next, the row stays, as an e-mail sent stays
// sent); with JobOnce, only if no run of the period wrote it before (an
// e-mail sent with an idempotency key the mail service dedupes on).
// Inside a WithTx view it commits with the lock's transaction.
func (s *Store) RecordJob(ctx context.Context, period string, client int) error {
	q, done, err := s.q(ctx)
	if err != nil {
		return err
	}
	defer done()
	stmt := SQLJob
	if s.JobOnce {
		stmt = SQLJobOnce
	}
	if _, err := q.Exec(ctx, stmt, s.Job, period, client); err != nil {
		return fmt.Errorf("storage job: %v", err)
	}
	return nil
}

// JobRow is one row of the job table: client ran Job for Period.
type JobRow struct {
	Job    string
	Period string
	Client int
}

// Jobs reads the job table at dsn, in the order its rows were written.
func Jobs(ctx context.Context, dsn string) ([]JobRow, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("storage jobs: %v", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT job, period, client FROM jobs ORDER BY n`)
	if err != nil {
		return nil, fmt.Errorf("storage jobs: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JobRow, error) {
		var j JobRow
		err := r.Scan(&j.Job, &j.Period, &j.Client)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("storage jobs: %v", err)
	}
	return out, nil
}

// Close closes the store's connection (not a WithTx view's transaction).
func (s *Store) Close() {
	if s.tx != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if *s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		(*s.conn).Close(ctx)
		*s.conn = nil
	}
}
