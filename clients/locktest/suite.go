// suite.go is what every check shares (suite): its clients, keys and
// contexts, the lease a granted call must return, and the outcome each
// call must end with (wantHeld, wantNotHeld, wantOK, wantUnknown).

package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

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
