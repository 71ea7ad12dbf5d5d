// Package locktest checks an implementation of clients.Lock against the
// contract the harness relies on, on real servers, in the spirit of
// testing/fstest: a lock that passes can be named by any scenario, and
// its history means what the checkers assume it means.
//
//	func TestMyLock(t *testing.T) {
//		locktest.TestLock(t, func(t testing.TB) clients.Lock {
//			l, err := clients.NewRedlock(clients.Config{Servers: map[clients.Backend][]clients.Node{clients.RedisBackend: nodes}}, false)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { l.Close() })
//			return l
//		}, locktest.Options{Quorum: true, Cut: cut})
//	}
//
// Every check (see Checks) builds its own clients with newLock (one per
// client of the story: a holder, a rival, a bystander), works on its own
// random key, and closes nothing itself: newLock registers the Close with
// t.Cleanup. A client that implements clients.Warmer is warmed first, as
// the worker does. Every call is bounded (Options.Timeout) and every wait
// is a bounded poll; with the default TTLs the whole suite takes 2-3 s
// for a Redis lock, about 1 s for a PostgreSQL lock, and 4 s for etcd
// (whose client waits out its context when no member answers).
//
// The checks:
//
//   - exclusive: a second client is refused while the first holds the
//     lock, with ErrNotAcquired and reason held (or quorum, for a lock
//     over several nodes, Options.Quorum); the lease says what it is
//     (key, token, Start within the call, Validity within (0, ttl], or 0
//     for a lock without expiry).
//   - release-frees: after a release, another client and then the first
//     one again get the lock.
//   - stale-release: releasing a lease already released, while another
//     client holds the lock, is refused with ErrNotHeld (reason not-held)
//     and leaves the new holder's lock in place.
//   - forged-release: releasing a lease with the holder's key but a token
//     no one was granted, from another client and from the holder's own,
//     is refused not-held and leaves the lock in place.
//   - extend: an extend of a held lease returns a valid lease with the
//     same key and token, which still holds the lock past the first
//     lease's TTL; releasing it frees the lock.
//   - extend-lost: extending a released lease is refused not-held, before
//     and after another client took the lock, and takes nothing back.
//   - expiry (locks with a TTL): a lease asked for ShortTTL runs out: a
//     rival is refused at once, then granted within ShortTTL + 1.5 s; by
//     then the holder's lease must no longer be valid by the lock's own
//     measure (Lease.StillValid with Options.WallClock); extending or
//     releasing the expired lease is refused not-held and does not free
//     the rival's lock.
//   - validity-bound (locks with a TTL): a granted lease never claims
//     validity past ttl counted from the latest moment its request could
//     have been sent. With every reply delayed by d = TTL/30
//     (Options.Delay), that moment is at most d before the call returned:
//     Start + Validity <= return - d + ttl. A lock that counts its lease
//     from the replies (no validity check) fails here; without
//     Options.Delay (d = 0) only a lease claiming more than the TTL from
//     its return does. A lease timed by the wall clock (Deadline set) is
//     left to the expiry check, which judges it by Options.WallClock.
//     With every reply delayed past a TTL of a quarter of the per-node
//     timeout (clients.DefaultNodeTimeout), the acquire must be refused
//     or grant a lease with validity left when it returns; a lock that
//     skips the validity check grants one already spent.
//   - unreachable (with Options.Cut): with every server unreachable
//     (each call given at most 1s), extending (unless
//     Options.LocalExtend) and then releasing a held lease must fail with
//     an unknown outcome (an error that is neither ErrNotAcquired nor
//     ErrNotHeld: the client cannot know whether the lease is gone), and
//     an acquire, by a client that was connected and by one built after
//     the cut, must fail with an unknown outcome or a refusal with reason
//     timeout, never held, quorum, validity or not-held.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

// Options describes the lock under test and the hooks the suite needs.
type Options struct {
	// Quorum: the lock takes a majority of several nodes, so a client
	// refused because another holds the lock may say quorum as well as
	// held.
	Quorum bool
	// NoExpiry: leases have no expiry (Validity 0, no Deadline): a session
	// or transaction lock. The expiry and validity-bound checks are
	// skipped; lost leases are made by releasing them.
	NoExpiry bool
	// LocalExtend: Extend sends nothing (it only checks what the client
	// already knows), so it cannot notice an unreachable server: the
	// unreachable check does not extend.
	LocalExtend bool
	// NoExtend: the lock cannot extend at all; extend and extend-lost are
	// skipped.
	NoExtend bool
	// TTL is asked for leases that must outlive a check (default 3s). The
	// validity-bound check delays replies by TTL/30.
	TTL time.Duration
	// ShortTTL is asked for leases a check waits out (default 500ms).
	ShortTTL time.Duration
	// Timeout bounds every call to the lock (default 2s).
	Timeout time.Duration
	// WallClock is the wall clock the locks measure validity by, when
	// they do (the Config.WallClock newLock gives them); leases are judged
	// by Lease.StillValid(WallClock). Nil: time.Now.
	WallClock func() time.Time
	// Cut makes every server unreachable to every client, those already
	// connected included (their connections reset, new ones refused),
	// until restore is called (the suite calls it once). Nil: the
	// unreachable check is skipped.
	Cut func(t testing.TB) (restore func())
	// Delay delays every reply from the servers by d until restore is
	// called (the suite calls it once). Nil: validity-bound runs without
	// delay, which catches less.
	Delay func(t testing.TB, d time.Duration) (restore func())
}

func (o Options) withDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = 3 * time.Second
	}
	if o.ShortTTL <= 0 {
		o.ShortTTL = 500 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.WallClock == nil {
		o.WallClock = time.Now
	}
	return o
}

// NewLock builds one client of the lock under test and registers its
// Close with t.Cleanup; it reports a failure to build with t.Fatal.
type NewLock func(t testing.TB) clients.Lock

type check struct {
	name string
	run  func(s *suite, t testing.TB)
}

var checks = []check{
	{"exclusive", (*suite).exclusive},
	{"release-frees", (*suite).releaseFrees},
	{"wait-release", (*suite).waitRelease},
	{"stale-release", (*suite).staleRelease},
	{"forged-release", (*suite).forgedRelease},
	{"extend", (*suite).extend},
	{"extend-lost", (*suite).extendLost},
	{"expiry", (*suite).expiry},
	{"validity-bound", (*suite).validityBound},
	{"unreachable", (*suite).unreachable},
}

// Checks names the checks, in the order they run.
func Checks() []string {
	var out []string
	for _, c := range checks {
		out = append(out, c.name)
	}
	return out
}

// TestLock runs every check as a subtest of t.
func TestLock(t *testing.T, newLock NewLock, opts Options) {
	s := &suite{newLock: newLock, o: opts.withDefaults()}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.run(s, t) })
	}
}

// Result is the outcome of one check run by Run.
type Result struct {
	Check   string
	Failed  bool
	Skipped bool
	// Log is what the check logged and why it failed or was skipped.
	Log []string
	// Took is how long the check ran.
	Took time.Duration
}

func (r Result) String() string {
	state := "ok"
	switch {
	case r.Failed:
		state = "FAIL"
	case r.Skipped:
		state = "skip"
	}
	return fmt.Sprintf("%s: %s (%v): %s", r.Check, state, r.Took.Round(time.Millisecond), strings.Join(r.Log, "; "))
}

// Run runs every check and returns their results without failing t: for
// locks expected to fail some checks (a mutant, a lock that reproduces a
// pitfall). t serves only as the parent of the checks' own recorders
// (their TempDir, Context and the like); newLock receives the recorder.
func Run(t testing.TB, newLock NewLock, opts Options) []Result {
	s := &suite{newLock: newLock, o: opts.withDefaults()}
	var out []Result
	for _, c := range checks {
		r := &recorder{TB: t, name: t.Name() + "/" + c.name}
		start := time.Now()
		r.do(func() { c.run(s, r) })
		r.do(r.runCleanups)
		out = append(out, Result{Check: c.name, Failed: r.failed, Skipped: r.skipped && !r.failed, Log: r.logs, Took: time.Since(start)})
	}
	return out
}

// Failed names the checks that failed in rs.
func Failed(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if r.Failed {
			out = append(out, r.Check)
		}
	}
	return out
}

// recorder is a testing.TB that records instead of failing its parent.
// The embedded parent supplies what a recorder has no use to change
// (TempDir, Context, Setenv...) and testing.TB's unexported method.
type recorder struct {
	testing.TB
	name string

	mu       sync.Mutex
	failed   bool
	skipped  bool
	logs     []string
	cleanups []func()
}

// do runs f in its own goroutine, so FailNow and SkipNow can end it.
func (r *recorder) do(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v", p)
			}
		}()
		f()
	}()
	<-done
}

func (r *recorder) runCleanups() {
	for {
		r.mu.Lock()
		if len(r.cleanups) == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		r.mu.Unlock()
		r.do(f)
	}
}

func (r *recorder) log(s string) {
	r.mu.Lock()
	r.logs = append(r.logs, strings.TrimSuffix(s, "\n"))
	r.mu.Unlock()
}

func (r *recorder) Name() string            { return r.name }
func (r *recorder) Helper()                 {}
func (r *recorder) Cleanup(f func())        { r.mu.Lock(); r.cleanups = append(r.cleanups, f); r.mu.Unlock() }
func (r *recorder) Fail()                   { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recorder) FailNow()                { r.Fail(); runtime.Goexit() }
func (r *recorder) Failed() bool            { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *recorder) Log(args ...any)         { r.log(fmt.Sprintln(args...)) }
func (r *recorder) Logf(f string, a ...any) { r.log(fmt.Sprintf(f, a...)) }
func (r *recorder) Error(args ...any)       { r.Log(args...); r.Fail() }
func (r *recorder) Errorf(f string, a ...any) {
	r.Logf(f, a...)
	r.Fail()
}
func (r *recorder) Fatal(args ...any)         { r.Log(args...); r.FailNow() }
func (r *recorder) Fatalf(f string, a ...any) { r.Logf(f, a...); r.FailNow() }
func (r *recorder) SkipNow()                  { r.mu.Lock(); r.skipped = true; r.mu.Unlock(); runtime.Goexit() }
func (r *recorder) Skip(args ...any)          { r.Log(args...); r.SkipNow() }
func (r *recorder) Skipf(f string, a ...any)  { r.Logf(f, a...); r.SkipNow() }
func (r *recorder) Skipped() bool             { r.mu.Lock(); defer r.mu.Unlock(); return r.skipped }

// suite holds what every check shares.
type suite struct {
	newLock NewLock
	o       Options
}

// lock builds a client and warms it, as the worker does.
func (s *suite) lock(t testing.TB) clients.Lock {
	t.Helper()
	l := s.newLock(t)
	if w, ok := l.(clients.Warmer); ok {
		ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
		defer cancel()
		if err := w.Warm(ctx); err != nil {
			t.Fatalf("warm: %v", err)
		}
	}
	return l
}

func (s *suite) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// key is a fresh lock name for one check.
func key(t testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := t.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return "locktest:" + name + ":" + hex.EncodeToString(b)
}

// once makes f safe to call twice: the check restores as soon as it can,
// and again (deferred) when it ends early.
func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

func forged() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "locktest-forged-" + hex.EncodeToString(b)
}

func describe(err error) string {
	if err == nil {
		return "granted (nil error)"
	}
	kind := "unknown outcome"
	switch {
	case errors.Is(err, clients.ErrNotAcquired):
		kind = "refused (ErrNotAcquired)"
	case errors.Is(err, clients.ErrNotHeld):
		kind = "refused (ErrNotHeld)"
	}
	return fmt.Sprintf("%s, reason %q: %v", kind, clients.ReasonOf(err), err)
}

// acquire takes key on l, which must grant it, and checks the lease.
func (s *suite) acquire(t testing.TB, l clients.Lock, key string, ttl time.Duration, who string) clients.Lease {
	t.Helper()
	before := clients.Monotonic()
	lease, err := l.Acquire(s.ctx(t), key, ttl)
	after := clients.Monotonic()
	if err != nil {
		t.Fatalf("%s: acquire %s: %s", who, key, describe(err))
	}
	s.checkLease(t, lease, key, ttl, before, after, who+"'s lease")
	return lease
}

// checkLease checks what a granted acquire or extend returned.
func (s *suite) checkLease(t testing.TB, l clients.Lease, key string, ttl time.Duration, before, after int64, what string) {
	t.Helper()
	if l.Key != key {
		t.Errorf("%s: Key %q, want %q", what, l.Key, key)
	}
	if l.Token == "" {
		t.Errorf("%s: empty Token", what)
	}
	if l.Start < before || l.Start > after {
		t.Errorf("%s: Start %v outside [%v, %v] (ns since boot): Start must be read just before the request", what, l.Start, before, after)
	}
	if s.o.NoExpiry {
		if l.Validity != 0 || !l.Deadline.IsZero() {
			t.Errorf("%s: a lock without expiry returned Validity %v, Deadline %v", what, l.Validity, l.Deadline)
		}
		return
	}
	if l.Validity <= 0 || l.Validity > ttl {
		t.Errorf("%s: Validity %v outside (0, %v]", what, l.Validity, ttl)
	}
	if !l.StillValid(s.o.WallClock) {
		t.Errorf("%s: not valid on return (Validity %v of a %v TTL)", what, l.Validity, ttl)
	}
}

func (s *suite) wantHeld(t testing.TB, err error, what string) {
	t.Helper()
	want := []string{history.ReasonHeld}
	if s.o.Quorum {
		want = append(want, history.ReasonQuorum)
	}
	if !errors.Is(err, clients.ErrNotAcquired) || !slices.Contains(want, clients.ReasonOf(err)) {
		t.Errorf("%s: %s; want ErrNotAcquired with reason %s", what, describe(err), strings.Join(want, " or "))
	}
}

func wantNotHeld(t testing.TB, err error, what string) {
	t.Helper()
	if !errors.Is(err, clients.ErrNotHeld) || clients.ReasonOf(err) != history.ReasonNotHeld {
		t.Errorf("%s: %s; want ErrNotHeld with reason not-held", what, describe(err))
	}
}

func wantOK(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %s; want success", what, describe(err))
	}
}

// wantUnknown: the operation failed and the client cannot know its
// outcome.
func wantUnknown(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil || errors.Is(err, clients.ErrNotAcquired) || errors.Is(err, clients.ErrNotHeld) {
		t.Errorf("%s: %s; want an unknown outcome (an error that is neither ErrNotAcquired nor ErrNotHeld)", what, describe(err))
	}
}

// wantUnreachableAcquire: an acquire no server answered failed, with an
// unknown outcome or a refusal with reason timeout.
func wantUnreachableAcquire(t testing.TB, err error, what string) {
	t.Helper()
	if errors.Is(err, clients.ErrNotAcquired) && clients.ReasonOf(err) == history.ReasonTimeout && !errors.Is(err, clients.ErrNotHeld) {
		return
	}
	wantUnknown(t, err, what+" (or a refusal with reason timeout)")
}

func (s *suite) exclusive(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	_, err := b.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "b's acquire while a holds the lock")
	_, err = c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire while a holds the lock (after b was refused)")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
}

func (s *suite) releaseFrees(t testing.TB) {
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's release")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
	la2 := s.acquire(t, a, k, s.o.TTL, "a again, after b's release")
	wantOK(t, a.Release(s.ctx(t), la2), "a's second release")
}

// waitRelease: a lock whose acquire can wait (clients.Waiter) grants a
// waiter once the holder releases, with a fence above the holder's, and
// the waiter's lease is its own to release. (etcd's Mutex.Lock answers
// with the revision at which its turn came, not its key's: a release
// that compared the one with the key's found its own key "gone".)
func (s *suite) waitRelease(t testing.TB) {
	a, b := s.lock(t), s.lock(t)
	w, ok := b.(clients.Waiter)
	if !ok {
		t.Skip("the lock does not wait (clients.Waiter)")
	}
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	type grant struct {
		lease clients.Lease
		err   error
	}
	got := make(chan grant, 1)
	ctx := s.ctx(t)
	go func() {
		l, err := w.AcquireWait(ctx, k, s.o.TTL, s.o.Timeout/2)
		got <- grant{l, err}
	}()
	time.Sleep(s.o.Timeout / 8) // b waits behind a
	wantOK(t, a.Release(s.ctx(t), la), "a's release while b waits")
	g := <-got
	if g.err != nil {
		t.Fatalf("b's waiting acquire, after a's release: %s", describe(g.err))
	}
	if la.Fence != 0 && g.lease.Fence <= la.Fence {
		t.Errorf("b's fence %d after a's %d: want it above", g.lease.Fence, la.Fence)
	}
	wantOK(t, b.Release(s.ctx(t), g.lease), "b's release of the lease its wait was granted")
}

func (s *suite) staleRelease(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's release")
	wantNotHeld(t, a.Release(s.ctx(t), la), "a's second release of its released lease, while b holds the lock")
	_, err := c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after a's stale release (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release of its own lease after a's stale release")
}

func (s *suite) forgedRelease(t testing.TB) {
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	f := la
	f.Token, f.Start = forged(), clients.Monotonic()
	wantNotHeld(t, b.Release(s.ctx(t), f), "b's release of a forged lease on a's key")
	wantNotHeld(t, a.Release(s.ctx(t), f), "a's release of a forged lease on its own key")
	_, err := c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after the forged releases (a must still hold the lock)")
	wantOK(t, a.Release(s.ctx(t), la), "a's release of its own lease after the forged releases")
}

func (s *suite) extend(t testing.TB) {
	if s.o.NoExtend {
		t.Skip("the lock does not extend (Options.NoExtend)")
	}
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	ttl, step := s.o.TTL, time.Duration(0)
	if !s.o.NoExpiry {
		ttl, step = s.o.ShortTTL, s.o.ShortTTL*6/10
	}
	la := s.acquire(t, a, k, ttl, "a")
	time.Sleep(step)
	le, err := a.Extend(s.ctx(t), la, ttl)
	after := clients.Monotonic()
	if err != nil {
		t.Fatalf("a's extend of its held lease, %v into its %v TTL: %s", step, ttl, describe(err))
	}
	if le.Token != la.Token {
		t.Errorf("the extended lease's Token %q differs from the lease's %q", le.Token, la.Token)
	}
	// An extended lease may keep its first Start (a lock without expiry
	// returns the lease as it was; a TTL lock that did would only be
	// cautious), but Start must not be later than the extend's request.
	s.checkLease(t, le, k, ttl, la.Start, after, "the extended lease")
	time.Sleep(step)
	if !le.StillValid(s.o.WallClock) {
		t.Errorf("the extended lease is no longer valid %v after the extend (Validity %v of a %v TTL)", step, le.Validity, ttl)
	}
	_, err = b.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, fmt.Sprintf("b's acquire %v after a's first grant (past its TTL, within the extended one)", 2*step))
	wantOK(t, a.Release(s.ctx(t), le), "a's release of the extended lease")
	lb := s.acquire(t, b, k, ttl, "b, after a released the extended lease")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

func (s *suite) extendLost(t testing.TB) {
	if s.o.NoExtend {
		t.Skip("the lock does not extend (Options.NoExtend)")
	}
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	wantOK(t, a.Release(s.ctx(t), la), "a's release")
	_, err := a.Extend(s.ctx(t), la, s.o.TTL)
	wantNotHeld(t, err, "a's extend of its released lease")
	lb := s.acquire(t, b, k, s.o.TTL, "b, after a's refused extend")
	_, err = a.Extend(s.ctx(t), la, s.o.TTL)
	wantNotHeld(t, err, "a's extend of its released lease, while b holds the lock")
	_, err = c.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "c's acquire after a's refused extends (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

// expiryMargin is how long after a lease's TTL (from its acquire's
// start) the expiry check counts it gone from every server: a SET that
// reached a node late keeps the key there that much longer.
const expiryMargin = 250 * time.Millisecond

func (s *suite) expiry(t testing.TB) {
	if s.o.NoExpiry {
		t.Skip("leases do not expire (Options.NoExpiry)")
	}
	a, b, c := s.lock(t), s.lock(t), s.lock(t)
	k := key(t)
	ttl := s.o.ShortTTL
	la := s.acquire(t, a, k, ttl, "a")
	_, err := b.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, "b's acquire at once")
	// Poll until b gets the lock, bounded.
	giveUp := la.Start + int64(ttl+1500*time.Millisecond)
	var lb clients.Lease
	for {
		time.Sleep(20 * time.Millisecond)
		lb, err = b.Acquire(s.ctx(t), k, s.o.TTL)
		if err == nil {
			break
		}
		if !errors.Is(err, clients.ErrNotAcquired) {
			t.Fatalf("b's acquire while waiting for a's lease to expire: %s", describe(err))
		}
		if clients.Monotonic() > giveUp {
			t.Fatalf("a's %v lease never expired: b still refused %v after a's grant (%s)",
				ttl, time.Duration(clients.Monotonic()-la.Start).Round(time.Millisecond), describe(err))
		}
	}
	granted := time.Duration(clients.Monotonic() - la.Start)
	t.Logf("b granted %v after a's acquire began (TTL %v, a's validity %v)", granted.Round(time.Millisecond), ttl, la.Validity)
	if la.StillValid(s.o.WallClock) {
		t.Errorf("a's lease is still valid by the lock's own measure (Validity %v, Deadline %v) after b was granted the lock %v after a's acquire began: two holders",
			la.Validity, la.Deadline, granted.Round(time.Millisecond))
	}
	// b may be granted by a majority while a's key still lives on a node
	// its SET reached a little later: a's release would then rightly
	// delete its own key there. Wait until a's key has expired on every
	// node (its TTL from a's start, plus a margin for a late SET).
	if rest := time.Duration(la.Start + int64(ttl+expiryMargin) - clients.Monotonic()); rest > 0 {
		time.Sleep(rest)
	}
	_, err = a.Extend(s.ctx(t), la, ttl)
	wantNotHeld(t, err, "a's extend of its expired lease, while b holds the lock")
	wantNotHeld(t, a.Release(s.ctx(t), la), "a's release of its expired lease, while b holds the lock")
	_, err = c.Acquire(s.ctx(t), k, ttl)
	s.wantHeld(t, err, "c's acquire after a's stale extend and release (b must still hold the lock)")
	wantOK(t, b.Release(s.ctx(t), lb), "b's release")
}

func (s *suite) validityBound(t testing.TB) {
	if s.o.NoExpiry {
		t.Skip("leases do not expire (Options.NoExpiry)")
	}
	a := s.lock(t)
	ttl := s.o.TTL
	// A reply delayed d left the server at most at after-d, so the
	// request was sent no later than that: a lease valid past
	// after - d + ttl certainly counts its validity from after the
	// request was sent.
	try := func(k, what string, d time.Duration) {
		l, err := a.Acquire(s.ctx(t), k, ttl)
		after := clients.Monotonic()
		if err != nil {
			t.Logf("%s: not granted, nothing to bound: %s", what, describe(err))
			return
		}
		defer func() { _ = a.Release(s.ctx(t), l) }()
		if !l.Deadline.IsZero() {
			t.Logf("%s: the lease is timed by the wall clock (Deadline %v): the expiry check judges it", what, l.Deadline)
			return
		}
		if over := time.Duration(l.Start + int64(l.Validity) - (after - int64(d) + int64(ttl))); over > 0 {
			t.Errorf("%s: the lease is valid until %v after the TTL counted from the latest moment its request could have left (Start %v before the call returned, Validity %v of %v): its validity is counted from after the request was sent",
				what, over, time.Duration(after-l.Start), l.Validity, ttl)
		}
	}
	try(key(t), "a's acquire", 0)
	if s.o.Delay == nil {
		t.Log("no Options.Delay: the bound was checked without delayed replies only")
		return
	}
	d := ttl / 30
	restore := once(s.o.Delay(t, d))
	defer restore()
	try(key(t), fmt.Sprintf("a's acquire with every reply delayed %v", d), d)
	restore()
	s.spentGrant(t, a)
}

// spentGrant is validity-bound's last check: with every reply delayed
// past a short TTL, the acquire must be refused, or grant a lease with
// validity left when the call returns. A lock that skips the validity
// check grants a lease already spent. The delay stays well inside the
// per-node timeout (clients.DefaultNodeTimeout), so the replies are read.
func (s *suite) spentGrant(t testing.TB, a clients.Lock) {
	ttl, d := clients.DefaultNodeTimeout/4, clients.DefaultNodeTimeout/2
	restore := once(s.o.Delay(t, d))
	defer restore()
	l, err := a.Acquire(s.ctx(t), key(t), ttl)
	after := clients.Monotonic()
	restore()
	if err != nil {
		t.Logf("with every reply delayed %v past the %v TTL: not granted: %s", d, ttl, describe(err))
		return
	}
	defer func() { _ = a.Release(s.ctx(t), l) }()
	if !l.Deadline.IsZero() {
		return // timed by the wall clock: the expiry check judges it
	}
	if end := l.Start + int64(l.Validity); end <= after {
		t.Errorf("with every reply delayed %v past the %v TTL, the acquire granted a lease already spent %v before the call returned: no validity check",
			d, ttl, time.Duration(after-end))
	}
}

func (s *suite) unreachable(t testing.TB) {
	if s.o.Cut == nil {
		t.Skip("no Options.Cut: the servers cannot be made unreachable")
	}
	a, b := s.lock(t), s.lock(t)
	k := key(t)
	la := s.acquire(t, a, k, s.o.TTL, "a")
	_, err := b.Acquire(s.ctx(t), k, s.o.TTL)
	s.wantHeld(t, err, "b's acquire while a holds the lock")
	restore := once(s.o.Cut(t))
	defer restore()
	// A lock may wait for its context (etcd's client does): give each
	// call to the unreachable servers 1s at most.
	cutCtx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), min(s.o.Timeout, time.Second))
		t.Cleanup(cancel)
		return ctx
	}
	if !s.o.LocalExtend {
		_, err = a.Extend(cutCtx(), la, s.o.TTL)
		wantUnknown(t, err, "a's extend of its held lease, no server reachable")
	}
	wantUnknown(t, a.Release(cutCtx(), la), "a's release of its held lease, no server reachable")
	_, err = b.Acquire(cutCtx(), k, s.o.TTL)
	wantUnreachableAcquire(t, err, "b's acquire (connected before), no server reachable")
	c := s.newLock(t) // built after the cut: its first dial is refused
	_, err = c.Acquire(cutCtx(), key(t), s.o.TTL)
	wantUnreachableAcquire(t, err, "c's acquire (built after the cut, on a free key), no server reachable")
	restore()
	_ = a.Release(s.ctx(t), la) // tidy up; a session lock already went with its connection
}
