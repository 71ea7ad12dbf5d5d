// Package clients holds the lock algorithms under test, each one
// implementation of Lock, and their registry. The worker that runs a lock
// client as a separate OS process, driven over a pipe, is package worker.
//
// Lock, Lease, Config, Spec, Register and the errors a lock returns are
// the plug-in contract a lock written outside this module is written
// against: docs/plugins.md lists it, with its version, and it changes only
// with a note in CHANGELOG.md that says how to move.
package clients

import (
	"context"
	"errors"
	"time"

	"github.com/locksim/locksim/history"
)

// ErrNotAcquired says the lock is held by someone else: a certain failure,
// not a timeout.
var ErrNotAcquired = errors.New("lock not acquired")

// ErrNotHeld says a release or extend found that this lease no longer
// holds the lock.
var ErrNotHeld = errors.New("lease no longer holds the lock")

// Lease is what a granted acquire hands the client.
type Lease struct {
	// Key is the lock's name.
	Key string
	// Token is the random value that tells this lease from every other.
	Token string
	// Fence is the fencing token (0 when the algorithm has none).
	Fence int64
	// Start is the CLOCK_MONOTONIC reading (ns, Monotonic) taken just
	// before the acquire was sent; validity counts from here.
	Start int64
	// Validity is how long after Start the client may assume it holds the
	// lock (0: until released; a session lock).
	Validity time.Duration
	// Nodes lists the nodes that granted it (Redlock).
	Nodes []string
	// Deadline is, for a lock that measures its validity by the wall
	// clock, the wall-clock instant until which the client may assume it
	// holds the lock. Zero: validity is measured on CLOCK_MONOTONIC
	// (Start + Validity), which no clock jump moves.
	Deadline time.Time
	// Live, when set, says whether the lock's own connection still vouches
	// for the lease, as a ZooKeeper session's state does: false from the
	// moment the connection is lost (Curator's SUSPENDED) and after the
	// session expired (LOST). StillValid asks it too. Nil: there is
	// nothing to ask beyond the lease's time.
	Live func() bool
}

// monotonic is the process's CLOCK_MONOTONIC as its locks time their
// leases (UseMonotonic); history.Monotonic unless a worker's clock drifts.
var monotonic = history.Monotonic

// Monotonic reads the CLOCK_MONOTONIC (ns) by which this process's locks
// time their leases: Lease.Start and every validity check.
func Monotonic() int64 { return monotonic() }

// UseMonotonic makes f the process's lease clock (Monotonic): a worker
// whose client clock drifts reads it through the clock shim's control,
// as a process under the shim reads a drifting CLOCK_MONOTONIC. Call it
// once, before any lock is built.
func UseMonotonic(f func() int64) { monotonic = f }

// StillValid says whether the client may still assume it holds the lease,
// measured as the lock measures it: by the wall clock now() for a lease
// with a Deadline, else on CLOCK_MONOTONIC (Monotonic); and, for a lease
// whose lock says whether its connection vouches for it (Live), only while
// it does.
func (l Lease) StillValid(now func() time.Time) bool {
	if l.Live != nil && !l.Live() {
		return false
	}
	if !l.Deadline.IsZero() {
		return now().Before(l.Deadline)
	}
	return l.Validity == 0 || Monotonic() < l.Start+int64(l.Validity)
}

// Lock is one lock algorithm as a client sees it. A user's own lock is one
// more implementation.
type Lock interface {
	// Acquire tries once, without blocking, to take key for ttl (ttl is
	// ignored by locks without expiry). It returns ErrNotAcquired when the
	// lock is held elsewhere.
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	// Release gives the lock back.
	Release(ctx context.Context, l Lease) error
	// Extend renews a held lease for ttl more.
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Close frees connections.
	Close() error
}

// Waiter is a lock whose acquire can wait for a held lock, the way its
// library waits (a blocking call, its retries): a story's acquire with a
// wait. Its Spec says Waits.
type Waiter interface {
	// AcquireWait takes key for ttl, waiting up to wait for it while it is
	// held elsewhere; ErrNotAcquired when it is still held then.
	AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error)
}

// Warmer is a lock that can open its connections ahead of the first
// acquire; workers call it once after building the lock.
type Warmer interface {
	Warm(ctx context.Context) error
}
