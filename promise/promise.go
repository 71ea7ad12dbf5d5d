// Package promise is the closed set of properties a lock can promise its
// users, and a promise: one such property, in the words of the lock's own
// README, docs or code comment, with the address that says so.
//
// A story tests one property (scenarios.Scenario.Tests); a lock declares
// the ones it promises (clients.Spec.Promises for a registered lock, the
// hello's promises for a client program). sim findings counts a cell
// against a lock only when the lock promises what the story tests: a lock
// that does worse on a property it never promised "does not promise" it,
// which the page shows and does not count. This package imports nothing of
// locksim's: every other package may read it.
package promise

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Property is one thing a lock can promise. The set is closed: Parse
// refuses any other name.
type Property string

const (
	// Exclusion: two clients never both hold the lock while their leases
	// are valid, whatever the servers do that the lock says it survives.
	Exclusion Property = "exclusion"
	// TokenRelease: a release frees the lock only while it still holds the
	// caller's own token, never the next holder's.
	TokenRelease Property = "token-release"
	// ValidityAtAcquire: an acquire that took longer than the lease is
	// refused (Redlock's step 3: the validity is counted from before the
	// request).
	ValidityAtAcquire Property = "validity-at-acquire"
	// MonotonicLease: the lease is timed by a monotonic clock, so that a
	// step of the wall clock does not move its end.
	MonotonicLease Property = "monotonic-lease"
	// Renewal: the lease is renewed while it is held (a watchdog, a
	// keepalive, a heartbeat), and only while it is the caller's.
	Renewal Property = "renewal"
	// FencingToken: each grant carries a number that grows, which the
	// protected storage can check.
	FencingToken Property = "fencing-token"
	// LossNotice: the holder is told when its lock may be lost (a session
	// suspended or expired, a lease gone).
	LossNotice Property = "loss-notice"
	// BoundedCalls: every call returns within a bound (a timeout the
	// caller sets or the library documents).
	BoundedCalls Property = "bounded-calls"
	// PromptRelease: a release frees the lock at once, for the next
	// client to take.
	PromptRelease Property = "prompt-release"
	// Expiry: a lock whose holder died is freed within its TTL or
	// session, never held by nobody for longer.
	Expiry Property = "expiry"
	// Progress: a free lock that clients contend for is granted to one
	// of them.
	Progress Property = "progress"
	// AtLeastOnce: a job whose run died is run again.
	AtLeastOnce Property = "at-least-once"
	// ExactlyOnce: a job is run once per period, never twice.
	ExactlyOnce Property = "exactly-once"
)

// says is each property in a few words, as a page names it after "does
// not promise".
var says = map[Property]string{
	Exclusion:         "mutual exclusion while its lease is valid",
	TokenRelease:      "a release checked against its own token",
	ValidityAtAcquire: "an acquire refused when it took longer than the lease",
	MonotonicLease:    "a lease timed by a monotonic clock",
	Renewal:           "renewal while the lock is held",
	FencingToken:      "a fencing token",
	LossNotice:        "telling the holder when its lock may be lost",
	BoundedCalls:      "calls that return within a bound",
	PromptRelease:     "a release that frees the lock at once",
	Expiry:            "a lock freed within its TTL when its holder dies",
	Progress:          "a free lock granted to one of its contenders",
	AtLeastOnce:       "a job run at least once",
	ExactlyOnce:       "a job run exactly once",
}

// All lists every property, sorted by name.
func All() []Property {
	out := make([]Property, 0, len(says))
	for p := range says {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Names lists every property's name, sorted, for a schema's enum and an
// error's "expected one of".
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, string(p))
	}
	return out
}

// Parse reads a property's name, refusing any name outside the set.
func Parse(s string) (Property, error) {
	p := Property(s)
	if _, ok := says[p]; !ok {
		return "", fmt.Errorf("unknown property %q (expected one of: %s)", s, strings.Join(Names(), ", "))
	}
	return p, nil
}

// Says is the property in a few words ("a release checked against its own
// token").
func (p Property) Says() string {
	if s, ok := says[p]; ok {
		return s
	}
	return string(p)
}

// Liveness says the property is about a lock being had at all (a call
// that returns, a lock freed, a lock granted), not about two holders at
// once or the data they write: a page keeps defects of the two apart.
func (p Property) Liveness() bool {
	switch p {
	case BoundedCalls, PromptRelease, Expiry, Progress, AtLeastOnce:
		return true
	}
	return false
}

// Promise is one property a lock promises, in its own words.
type Promise struct {
	// Property is what it promises.
	Property Property `json:"property" yaml:"property"`
	// Quote is the lock's own words that promise it, word for word.
	Quote string `json:"quote" yaml:"quote"`
	// Source is where a reader finds the quote: an address, with the
	// file and line or the section ("https://github.com/mike-marcacci/node-redlock/blob/v5.0.0-beta.2/README.md#usage").
	Source string `json:"source" yaml:"source"`
	// Locks, when set, limits the promise to these of a program's locks
	// (tooz's redis driver, not its memcached one); empty: every lock it
	// plays.
	Locks []string `json:"locks,omitempty" yaml:"locks,omitempty"`
}

// Check says what is wrong with the promise: an unknown property, or a
// quote or source left out.
func (p Promise) Check() error {
	if _, err := Parse(string(p.Property)); err != nil {
		return err
	}
	if strings.TrimSpace(p.Quote) == "" {
		return fmt.Errorf("promise %s: no quote (the lock's own words that promise it)", p.Property)
	}
	if strings.TrimSpace(p.Source) == "" {
		return fmt.Errorf("promise %s: no source (where a reader finds the quote)", p.Property)
	}
	return nil
}

// Set is every promise one lock makes.
type Set []Promise

// Check checks every promise of the set.
func (s Set) Check() error {
	for _, p := range s {
		if err := p.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Of finds lock's promise of property p: the first of the set that
// promises p and is not limited to other locks.
func (s Set) Of(p Property, lock string) (Promise, bool) {
	for _, q := range s {
		if q.Property == p && (len(q.Locks) == 0 || slices.Contains(q.Locks, lock)) {
			return q, true
		}
	}
	return Promise{}, false
}
