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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
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
