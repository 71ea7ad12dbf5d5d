package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

// PlainExpirer is a lock that can renew a key with a plain PEXPIRE, whoever
// holds it: the naive watchdog, which can extend another holder's lock.
type PlainExpirer interface {
	PlainExpire(ctx context.Context, key string, ttl time.Duration) ([]string, error)
}

// startWatchdog renews l every WatchdogEvery (default ttl/3) until the
// returned stop is called, or, with WatchdogMax, until it has renewed
// that many times (a note says so; the lease then runs out). Each renewal is a renew note in the history
// (with its TTL when it succeeded, its reason when not); it is not an
// operation, because it runs beside the client's own operations. A
// renewal that finds the lease gone drops it: the client has learned it
// lost the lock, and stops renewing. When the worker is paused (SIGSTOP),
// so is its watchdog.
func (s *state) startWatchdog(id int64, l clients.Lease, ttl time.Duration) (stop func()) {
	every := s.init.WatchdogEvery
	if every <= 0 {
		every = ttl / 3
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		renewed := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			nl, err := s.renew(ctx, l, ttl)
			if ctx.Err() != nil {
				return
			}
			note := history.Event{Type: history.Note, Op: history.OpRenew, Key: l.Key, Token: l.Token, Nodes: nl.Nodes}
			if err != nil {
				note.Reason = clients.ReasonOf(err)
				note.Detail = fmt.Sprintf("watchdog (%s) renewal failed: %v", s.init.Watchdog, err)
			} else {
				note.TTL = int64(ttl)
				note.Detail = fmt.Sprintf("watchdog (%s) renewed for %v", s.init.Watchdog, ttl)
				s.setLease(nl)
				l = nl
			}
			s.event(id, note)
			if note.Reason == history.ReasonNotHeld {
				s.dropLease(l.Key, l.Token)
				return
			}
			if err == nil {
				renewed++
			}
			if max := s.init.WatchdogMax; max > 0 && renewed >= max {
				s.expireBounded(ctx, id, l, max)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// expireBounded ends a watchdog that has renewed l max times, its bound:
// it renews no more, waits for the lease to run out (Start + Validity, on
// the monotonic clock), then notes that it did (a renewal not sent, reason
// expired, which ends the client's hold for the checkers) and drops it.
func (s *state) expireBounded(ctx context.Context, id int64, l clients.Lease, max int) {
	left := time.Duration(l.Start + int64(l.Validity) - clients.Monotonic())
	select {
	case <-ctx.Done():
		return
	case <-time.After(left):
	}
	s.event(id, history.Event{Type: history.Note, Op: history.OpRenew, Key: l.Key, Token: l.Token, Reason: history.ReasonExpired,
		Detail: fmt.Sprintf("watchdog (%s) stopped at its bound of %d renewals; the lease ran out", s.init.Watchdog, max)})
	s.dropLease(l.Key, l.Token)
}

// renew is one renewal: token-checked (the lock's Extend) or a plain
// PEXPIRE that renews the key whoever holds it.
func (s *state) renew(ctx context.Context, l clients.Lease, ttl time.Duration) (clients.Lease, error) {
	if s.init.Watchdog != "pexpire" {
		return s.lock.Extend(ctx, l, ttl)
	}
	pe, ok := s.lock.(PlainExpirer)
	if !ok {
		return l, fmt.Errorf("lock %s cannot renew with plain PEXPIRE", s.init.Lock)
	}
	start := clients.Monotonic()
	nodes, err := pe.PlainExpire(ctx, l.Key, ttl)
	l.Nodes = nodes
	if err == nil {
		l.Start, l.Validity = start, ttl-clients.Drift(ttl)
	}
	return l, err
}
