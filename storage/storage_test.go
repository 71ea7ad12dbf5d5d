package storage_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/env/envtest"
	"github.com/locksim/locksim/storage"
)

// testPG is the one cluster the package's tests share.
var testPG *env.Postgres

func TestMain(m *testing.M) {
	os.Exit(envtest.RunWithPostgres(m, &testPG))
}

// open resets the tables and opens n stores in mode.
func open(t *testing.T, mode storage.Mode, n int) (context.Context, []*storage.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	dsn := testPG.DSN(testPG.Addr())
	if err := storage.Setup(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	var out []*storage.Store
	for i := 0; i < n; i++ {
		s, err := storage.Open(ctx, dsn, mode)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return ctx, out
}

func write(t *testing.T, ctx context.Context, s *storage.Store, read, value, fence int64, token string, want bool) {
	t.Helper()
	ok, err := s.Write(ctx, read, value, fence, token)
	if err != nil {
		t.Fatal(err)
	}
	if ok != want {
		t.Fatalf("write(read=%d value=%d fence=%d token=%q) accepted=%v, want %v", read, value, fence, token, ok, want)
	}
}

func value(t *testing.T, ctx context.Context, s *storage.Store) int64 {
	t.Helper()
	v, err := s.Value(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPlainLostUpdate: plain storage accepts a stale read-modify-write,
// which is the damage the checker looks for.
func TestPlainLostUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Plain, 2)
	r1, _ := s[0].Read(ctx)
	r2, _ := s[1].Read(ctx)
	write(t, ctx, s[0], r1, r1+1, 0, "", true)
	write(t, ctx, s[1], r2, r2+1, 0, "", true)
	if v := value(t, ctx, s[0]); v != 1 {
		t.Fatalf("counter %d, want 1 (one update lost)", v)
	}
}

func TestFencedRefusesLowerAcceptsEqualOrHigher(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Fenced, 2)
	write(t, ctx, s[0], 0, 1, 5, "", true)  // fence 5
	write(t, ctx, s[1], 0, 1, 4, "", false) // stale token 4: refused
	write(t, ctx, s[0], 1, 2, 5, "", true)  // equal: the same holder again
	write(t, ctx, s[1], 2, 3, 9, "", true)  // higher
	write(t, ctx, s[0], 2, 3, 5, "", false) // the old holder, after 9
	if v := value(t, ctx, s[0]); v != 3 {
		t.Fatalf("counter %d, want 3", v)
	}
}

// TestFencedReadShutsOutTheOldHolder: the new holder's read raises the
// fence, so the old holder's write landing between that read and the new
// holder's write is refused, and no update is lost.
func TestFencedReadShutsOutTheOldHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Fenced, 2)
	old, err := s[0].ReadFenced(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The old holder (token 1) pauses; the new one (token 2) reads.
	fresh, err := s[1].ReadFenced(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	write(t, ctx, s[0], old, old+1, 1, "", false) // the old holder wakes: refused
	write(t, ctx, s[1], fresh, fresh+1, 2, "", true)
	if v := value(t, ctx, s[0]); v != 1 {
		t.Fatalf("counter %d, want 1", v)
	}
}

func TestTokenCASRefusesAfterAnotherClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.TokenCAS, 2)
	if err := s[0].Claim(ctx, "tokA"); err != nil {
		t.Fatal(err)
	}
	r, _ := s[0].Read(ctx)
	// A pauses; its lease expires; B takes the lock and claims the row.
	if err := s[1].Claim(ctx, "tokB"); err != nil {
		t.Fatal(err)
	}
	rb, _ := s[1].Read(ctx)
	write(t, ctx, s[1], rb, rb+1, 0, "tokB", true)
	write(t, ctx, s[0], r, r+1, 0, "tokA", false) // A wakes up: refused
	write(t, ctx, s[0], r, r+1, 0, "", false)     // no token: refused
	if v := value(t, ctx, s[0]); v != 1 {
		t.Fatalf("counter %d, want 1", v)
	}
	// Claim is a no-op outside token-cas.
	ctx2, p := open(t, storage.Plain, 1)
	if err := p[0].Claim(ctx2, "x"); err != nil {
		t.Fatal(err)
	}
}

func TestIdempotentRefusesDuplicatePeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Idempotent, 2)
	r1, _ := s[0].Read(ctx)
	r2, _ := s[1].Read(ctx) // both read 0: the same period
	write(t, ctx, s[0], r1, r1+1, 0, "", true)
	write(t, ctx, s[1], r2, r2+1, 0, "", false) // duplicate (job, period 0)
	if v := value(t, ctx, s[0]); v != 1 {
		t.Fatalf("counter %d, want 1 (untouched by the duplicate)", v)
	}
	r3, _ := s[1].Read(ctx)
	write(t, ctx, s[1], r3, r3+1, 0, "", true) // the next period
	if v := value(t, ctx, s[0]); v != 2 {
		t.Fatalf("counter %d, want 2", v)
	}
}

// TestJobOnceWritesAPeriodsRowOnce: a job's first effect is a row per
// run, so a period run twice is two rows; made idempotent (JobOnce), the
// second run of a period writes nothing, and another period still does.
func TestJobOnceWritesAPeriodsRowOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	for _, once := range []bool{false, true} {
		ctx, s := open(t, storage.TokenCAS, 2)
		for _, st := range s {
			st.JobOnce = once
		}
		for _, run := range []struct {
			st     *storage.Store
			period string
			client int
		}{{s[0], "09:00", 1}, {s[1], "09:00", 2}, {s[1], "10:00", 2}} {
			if err := run.st.RecordJob(ctx, run.period, run.client); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := storage.Jobs(ctx, testPG.DSN(testPG.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		want := "counter 09:00 1, counter 09:00 2, counter 10:00 2"
		if once {
			want = "counter 09:00 1, counter 10:00 2"
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s %d", r.Job, r.Period, r.Client))
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("JobOnce %v: job table %q, want %q", once, strings.Join(got, ", "), want)
		}
	}
}

// TestWithTxCommitsWithTheTransaction: a view's writes are part of the
// given transaction (a refused duplicate does not abort it).
func TestWithTxCommitsWithTheTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Idempotent, 1)
	conn, err := pgxConnect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := s[0].WithTx(tx)
	write(t, ctx, v, 0, 1, 0, "", true)
	write(t, ctx, v, 0, 1, 0, "", false) // duplicate inside the same transaction
	if got := value(t, ctx, s[0]); got != 0 {
		t.Fatalf("uncommitted write visible: %d", got)
	}
	r, err := v.Read(ctx)
	if err != nil || r != 1 {
		t.Fatalf("read in the transaction: %d %v", r, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit after a refused duplicate: %v", err)
	}
	if got := value(t, ctx, s[0]); got != 1 {
		t.Fatalf("after commit: %d", got)
	}
}

// TestBrokenConnectionIsAnError: a write on a session the server ended is
// an error, never a refusal; the store reconnects for the next call.
func TestBrokenConnectionIsAnError(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Fenced, 1)
	if _, err := s[0].Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testPG.Reset(ctx); err != nil { // terminates the store's session
		t.Fatal(err)
	}
	ok, err := s[0].Write(ctx, 0, 1, 1, "")
	if err == nil {
		t.Fatalf("write on a terminated session: accepted=%v, no error", ok)
	}
	write(t, ctx, s[0], 0, 1, 1, "", true)
}

func TestParseMode(t *testing.T) {
	for _, m := range storage.Modes() {
		if got, err := storage.ParseMode(string(m)); err != nil || got != m {
			t.Fatalf("%s: %v %v", m, got, err)
		}
	}
	if _, err := storage.ParseMode("fencd"); err == nil {
		t.Fatal("typo accepted")
	}
}

func pgxConnect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, testPG.DSN(testPG.Addr()))
}

// TestResetRestoresSetupsState: after writes, a claimed period, a raised
// fence and drawn fencing tokens, Reset leaves what Setup leaves: value 0,
// a fence of 0 (the lowest token is accepted again), no runs, and the
// sequence's next token 1; the stores opened before it go on working.
func TestResetRestoresSetupsState(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	ctx, s := open(t, storage.Fenced, 1)
	idem, err := storage.Open(ctx, testPG.DSN(testPG.Addr()), storage.Idempotent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(idem.Close)
	write(t, ctx, s[0], 0, 1, 5, "", true)
	write(t, ctx, idem, 1, 2, 0, "", true) // claims period 1
	conn, err := pgx.Connect(ctx, testPG.DSN(testPG.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var next int64
	if err := conn.QueryRow(ctx, `SELECT nextval('fence_seq') + nextval('fence_seq')`).Scan(&next); err != nil || next != 3 {
		t.Fatalf("two tokens drawn: %d, %v", next, err)
	}
	if err := storage.Reset(ctx, testPG.DSN(testPG.Addr())); err != nil {
		t.Fatal(err)
	}
	if v := value(t, ctx, s[0]); v != 0 {
		t.Fatalf("counter %d after Reset, want 0", v)
	}
	if err := conn.QueryRow(ctx, `SELECT nextval('fence_seq')`).Scan(&next); err != nil || next != 1 {
		t.Fatalf("first token after Reset: %d, %v; want 1", next, err)
	}
	write(t, ctx, s[0], 0, 1, 1, "", true) // fence back at 0: token 1 accepted
	write(t, ctx, idem, 1, 2, 0, "", true) // period 1 free again
}
