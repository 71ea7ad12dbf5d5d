package worker

import (
	"context"
	"fmt"
	"time"

	"locksim/clients"
	"locksim/history"
)

// PlainExpirer is a lock that can renew a key with a plain PEXPIRE, whoever
// holds it: seed 000's watchdog, which can extend another holder's lock.
type PlainExpirer interface {
	PlainExpire(ctx context.Context, key string, ttl time.Duration) ([]string, error)
}

// startWatchdog renews l every WatchdogEvery (default ttl/3) until the
// returned stop is called. Each renewal is a note in the history; it is
// not an operation, because it runs beside the client's own operations.
// When the worker is paused (SIGSTOP), so is its watchdog.
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
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			note := history.Event{Type: history.Note, Op: "renew", Key: l.Key, Token: l.Token}
			var nodes []string
			var err error
			if s.init.Watchdog == "pexpire" {
				pe, ok := s.lock.(PlainExpirer)
				if !ok {
					err = fmt.Errorf("lock %s cannot renew with plain PEXPIRE", s.init.Lock)
				} else {
					nodes, err = pe.PlainExpire(ctx, l.Key, ttl)
				}
			} else {
				var nl clients.Lease
				nl, err = s.lock.Extend(ctx, l, ttl)
				nodes = nl.Nodes
			}
			if ctx.Err() != nil {
				return
			}
			note.Nodes = nodes
			note.Detail = fmt.Sprintf("watchdog (%s) renewed for %v", s.init.Watchdog, ttl)
			if err != nil {
				note.Detail = fmt.Sprintf("watchdog (%s) renewal failed: %v", s.init.Watchdog, err)
			}
			s.event(id, note)
		}
	}()
	return func() { cancel(); <-done }
}
