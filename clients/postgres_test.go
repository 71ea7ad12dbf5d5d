package clients

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/env/envtest"
	"github.com/locksim/locksim/storage"
)

// testPG is the one cluster the package's PostgreSQL tests share.
var testPG *env.Postgres

func TestMain(m *testing.M) {
	os.Exit(envtest.RunWithPostgres(m, &testPG))
}

// pgReset gives a test a clean cluster: no other sessions, fresh tables.
func pgReset(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testPG.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	return testPG.DSN(testPG.Addr())
}

func newPGLock(t *testing.T, name, dsn string) Lock {
	t.Helper()
	spec, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.New(Config{Postgres: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAdvisoryKeyDeterministic(t *testing.T) {
	if AdvisoryKey("job") != AdvisoryKey("job") || AdvisoryKey("job") == AdvisoryKey("job2") {
		t.Fatal("AdvisoryKey is not a function of the name")
	}
	// Checked independently: struct.unpack('>q', sha256(b'refresh-forecasts').digest()[:8]).
	// It must never change, or clients of two versions would not exclude each other.
	const want = int64(1804337156659552117)
	if got := AdvisoryKey("refresh-forecasts"); got != want {
		t.Fatalf("AdvisoryKey(refresh-forecasts) = %d, want %d", got, want)
	}
}

func TestPGSessionExcludesAndUnlockFrees(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a, b := newPGLock(t, "postgres-session", dsn), newPGLock(t, "postgres-session", dsn)
	la, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if la.Validity != 0 || la.Fence != 0 || la.Token == "" || la.Start == 0 {
		t.Fatalf("lease %+v", la)
	}
	if _, err := b.Acquire(ctx, "job", 0); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second session: %v, want ErrNotAcquired", err)
	}
	if _, err := a.Extend(ctx, la, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("double release: %v, want ErrNotHeld", err)
	}
	lb, err := b.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// TestPGSessionBrokenConnection: a holder whose session the server ended
// gets an error from Release, not a false success, and the lock is free.
func TestPGSessionBrokenConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a, b := newPGLock(t, "postgres-session", dsn), newPGLock(t, "postgres-session", dsn)
	la, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := testPG.Reset(ctx); err != nil { // terminates a's session
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("release on a dead session: %v, want a connection error", err)
	}
	if _, err := a.Extend(ctx, la, 0); err == nil {
		t.Fatal("extend of a lease on a dead session succeeded")
	}
	lb, err := b.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatalf("the server should have freed the dead session's lock: %v", err)
	}
	_ = b.Release(ctx, lb)
	// a reconnects: a new session, a new lease.
	if _, err := a.Acquire(ctx, "job", 0); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
}

// TestPGPooledReleaseLeaks is the pooled-connection pitfall: the release lands on
// another pooled connection, reports success, and the lock stays held.
func TestPGPooledReleaseLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a, b := newPGLock(t, "postgres-pooled", dsn), newPGLock(t, "postgres-session", dsn)
	la, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("the buggy release reports success: got %v", err)
	}
	if _, err := b.Acquire(ctx, "job", 0); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("after the pooled release: %v, want ErrNotAcquired (leaked)", err)
	}
	// Closing the pool ends connection #1's session: the leak ends.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, err := b.Acquire(ctx, "job", 0)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("after closing the pool: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPGXactCommitFrees: the xact lock excludes, carries its transaction,
// and commit both makes the write durable and frees the lock.
func TestPGXactCommitFrees(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a, b := newPGLock(t, "postgres-xact", dsn), newPGLock(t, "postgres-xact", dsn)
	la, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "job", 0); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second client: %v, want ErrNotAcquired", err)
	}
	tx := a.(TxHolder).Tx()
	if tx == nil {
		t.Fatal("no transaction while holding")
	}
	st, err := storage.Open(ctx, dsn, storage.Plain)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	view := st.WithTx(tx)
	v, err := view.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := view.Write(ctx, v, v+1, 0, la.Token); err != nil || !ok {
		t.Fatalf("write in the lock's transaction: %v %v", ok, err)
	}
	if got, _ := st.Value(ctx); got != 0 {
		t.Fatalf("uncommitted write visible outside: %d", got)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if a.(TxHolder).Tx() != nil {
		t.Fatal("transaction still set after release")
	}
	if got, _ := st.Value(ctx); got != 1 {
		t.Fatalf("after commit the counter is %d, want 1", got)
	}
	lb, err := b.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatalf("after commit: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// TestPGXactConnectionLoss: when the holder's session dies, the lock and
// the uncommitted write go together, and Release is an error.
func TestPGXactConnectionLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a := newPGLock(t, "postgres-xact", dsn)
	la, err := a.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, dsn, storage.Plain)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.WithTx(a.(TxHolder).Tx()).Write(ctx, 0, 1, 0, la.Token); err != nil || !ok {
		t.Fatalf("write: %v %v", ok, err)
	}
	st.Close()
	if err := testPG.Reset(ctx); err != nil { // kills a's session (and resets the tables)
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err == nil {
		t.Fatal("commit on a dead session reported success")
	}
	b := newPGLock(t, "postgres-xact", dsn)
	lb, err := b.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatalf("lock not freed with the session: %v", err)
	}
	_ = b.Release(ctx, lb)
}

func TestPGSequenceTokensIncrease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	s1, err := NewPGSequence(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, _ := NewPGSequence(dsn)
	defer s2.Close()
	var last int64
	for i := 0; i < 10; i++ {
		src := s1
		if i%2 == 1 {
			src = s2
		}
		v, err := src.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			t.Fatalf("token %d after %d", v, last)
		}
		last = v
	}
}

// TestFencedSetsFence: the wrapper stamps each grant with the next token
// and keeps it across Extend; the xact lock stays a TxHolder.
func TestFencedSetsFence(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	src, err := NewPGSequence(dsn)
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := NewPGSession(Config{Postgres: dsn})
	f := Fenced(inner, src)
	defer f.Close()
	l1, err := f.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	l1e, err := f.Extend(ctx, l1, time.Second)
	if err != nil || l1e.Fence != l1.Fence || l1.Fence == 0 {
		t.Fatalf("extend: %+v %v (fence %d)", l1e, err, l1.Fence)
	}
	if err := f.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	l2, err := f.Acquire(ctx, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence <= l1.Fence {
		t.Fatalf("fence %d after %d", l2.Fence, l1.Fence)
	}
	_ = f.Release(ctx, l2)

	x, _ := NewPGXact(Config{Postgres: dsn})
	fx := Fenced(x, src)
	defer fx.Close()
	if _, ok := fx.(TxHolder); !ok {
		t.Fatal("Fenced(postgres-xact) is not a TxHolder")
	}
	if _, ok := f.(TxHolder); ok {
		t.Fatal("Fenced(postgres-session) claims to be a TxHolder")
	}
}

// TestPGSessionAcquireWait: a waiting acquire of postgres-session
// (pg_advisory_lock under lock_timeout) is refused, held, when the wait
// runs out, leaves the session usable, and is granted the moment the
// holder unlocks, not before.
func TestPGSessionAcquireWait(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uses the package's PostgreSQL cluster")
	}
	dsn := pgReset(t)
	ctx := tctx(t)
	a, b := newPGLock(t, "postgres-session", dsn), newPGLock(t, "postgres-session", dsn)
	la, err := a.Acquire(ctx, "job", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := b.(Waiter)
	start := time.Now()
	if _, err := w.AcquireWait(ctx, "job", time.Second, 200*time.Millisecond); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("a wait that runs out: %v, want ErrNotAcquired", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("refused after %v, before its 200ms wait ran out", took)
	}
	// The refusal left lock_timeout reset and the session usable.
	if _, err := b.Acquire(ctx, "other", time.Second); err != nil {
		t.Fatalf("the session after a refused wait: %v", err)
	}
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		released <- time.Now()
		if err := a.Release(ctx, la); err != nil {
			t.Errorf("release: %v", err)
		}
	}()
	lb, err := w.AcquireWait(ctx, "job", time.Second, 3*time.Second)
	if err != nil {
		t.Fatalf("a wait the holder's release ends: %v", err)
	}
	if got, at := time.Now(), <-released; got.Before(at) {
		t.Errorf("granted at %v, before the holder released at %v", got, at)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Errorf("release of the waited-for lease: %v", err)
	}
}
