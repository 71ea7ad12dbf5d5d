package cost

// measure.go: the timed loops. Each point runs its operation back to
// back for the point's duration, after a short warm-up that is not
// counted (the first connections, the servers' caches), and keeps every
// sample: the percentiles are exact, not estimated.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/storage"
)

// Latency is how long one operation took: its median and 99th
// percentile over Samples operations.
type Latency struct {
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Samples int           `json:"samples"`
}

// Rate is how many locks were granted and released per second by
// contending clients, and how many tries were refused.
type Rate struct {
	PerSec  float64 `json:"per_sec"`
	Granted int     `json:"granted"`
	Refused int     `json:"refused"`
}

// percentiles is the nearest-rank p50 and p99 of samples (sorted here).
func percentiles(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(samples)))) - 1
		return samples[max(i, 0)]
	}
	return Latency{P50: rank(50), P99: rank(99), Samples: len(samples)}
}

// warmUp is how long a point runs its operation before it counts: a
// tenth of the point, at most 200ms.
func warmUp(d time.Duration) time.Duration { return min(d/10, 200*time.Millisecond) }

// timeOps runs ops round robin, one after another, for d each (in all
// len(ops)*d, after the warm-up), timing each call: interleaved, the
// operations meet the same machine, so the difference of two of them is
// the price of what tells them apart, not of the moment each ran.
func timeOps(ctx context.Context, d time.Duration, ops ...func() error) ([]Latency, error) {
	warm := time.Now().Add(warmUp(d))
	for time.Now().Before(warm) {
		for _, op := range ops {
			if err := op(); err != nil {
				return nil, err
			}
		}
	}
	samples := make([][]time.Duration, len(ops))
	end := time.Now().Add(time.Duration(len(ops)) * d)
	for time.Now().Before(end) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, op := range ops {
			start := time.Now()
			if err := op(); err != nil {
				return nil, err
			}
			samples[i] = append(samples[i], time.Since(start))
		}
	}
	out := make([]Latency, len(ops))
	for i := range samples {
		out[i] = percentiles(samples[i])
	}
	return out, nil
}

// timeOp is timeOps of one operation.
func timeOp(ctx context.Context, d time.Duration, op func() error) (Latency, error) {
	l, err := timeOps(ctx, d, op)
	if err != nil {
		return Latency{}, err
	}
	return l[0], nil
}

// ttl is the lease every acquire asks for: a story's default, long past
// any point, so that no lease expires inside one.
const ttl = scenarios.DefaultTTL

// acquireRelease is one uncontended lock cycle: acquire key, release.
func acquireRelease(ctx context.Context, lk clients.Lock, key string) error {
	l, err := lk.Acquire(ctx, key, ttl)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	if err := lk.Release(ctx, l); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// contend runs clients goroutines, each with its own lock from locks,
// for d: each tries key(i), and releases what it is granted at once;
// refused, it waits a random time up to backoff (so that waiting
// clients neither spin on the servers nor idle) and tries again. The
// rate counts the grants.
func contend(ctx context.Context, d time.Duration, locks []clients.Lock, key func(i int) string, backoff time.Duration) (Rate, error) {
	var (
		mu      sync.Mutex
		r       Rate
		errs    []error
		wg      sync.WaitGroup
		started = time.Now()
		warm    = started.Add(warmUp(d))
		end     = warm.Add(d)
	)
	for i, lk := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			granted, refused := 0, 0
			for {
				now := time.Now()
				if now.After(end) || ctx.Err() != nil {
					break
				}
				counts := now.After(warm)
				l, err := lk.Acquire(ctx, key(i), ttl)
				switch {
				case errors.Is(err, clients.ErrNotAcquired):
					if counts {
						refused++
					}
					time.Sleep(time.Duration(rng.Int64N(int64(backoff) + 1)))
					continue
				case err != nil:
					mu.Lock()
					errs = append(errs, fmt.Errorf("client %d acquire: %w", i+1, err))
					mu.Unlock()
					return
				}
				err = lk.Release(ctx, l)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("client %d release: %w", i+1, err))
					mu.Unlock()
					return
				}
				if counts && time.Now().Before(end) {
					granted++
				}
			}
			mu.Lock()
			r.Granted += granted
			r.Refused += refused
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Rate{}, err
	}
	if len(errs) > 0 {
		return Rate{}, errors.Join(errs...)
	}
	r.PerSec = float64(r.Granted) / d.Seconds()
	return r, nil
}

// The defences a critical section can have, as a story names them.
const (
	// DefenceNone is a plain read-modify-write of the storage.
	DefenceNone = "none"
	// DefenceFenced writes with a fencing token (storage fenced): the
	// lock's own, or one drawn from a PostgreSQL sequence.
	DefenceFenced = "fenced"
	// DefenceTokenCAS claims the row for the lease's token and writes
	// only while it still carries it (storage token-cas).
	DefenceTokenCAS = "token-cas"
	// DefenceLeaseCheck checks, just before the write, that the lease is
	// still valid as the lock measures it (check_lease).
	DefenceLeaseCheck = "lease-check"
	// DefenceWatchdog renews the lease in the background (watchdog:
	// token): its price is one renewal (the lock's Extend) every TTL/3
	// per held lock.
	DefenceWatchdog = "watchdog"
)

// Defences lists them, in the order the table shows them.
var Defences = []string{DefenceNone, DefenceFenced, DefenceTokenCAS, DefenceLeaseCheck, DefenceWatchdog}

// section is one client's critical sections: its lock, a store for each
// storage mode, and the fencing-token source for a lock without tokens.
type section struct {
	lock   clients.Lock
	key    string
	stores map[storage.Mode]*storage.Store
	// fence draws a token for a lock whose leases carry none (nil: they
	// carry their own).
	fence clients.TokenSource
}

// cycle is one critical section with defence d: acquire, the storage's
// read-modify-write as the worker does it (claim, read, check, write),
// release. The write must be accepted: a refusal here, with one client,
// is a broken measurement, not a price.
func (s *section) cycle(ctx context.Context, d string) (err error) {
	l, err := s.lock.Acquire(ctx, s.key, ttl)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer func() {
		if rerr := s.lock.Release(ctx, l); rerr != nil && err == nil {
			err = fmt.Errorf("release: %w", rerr)
		}
	}()
	mode := storage.Plain
	switch d {
	case DefenceFenced:
		mode = storage.Fenced
		if s.fence != nil {
			if l.Fence, err = s.fence.Next(ctx); err != nil {
				return err
			}
		}
	case DefenceTokenCAS:
		mode = storage.TokenCAS
	}
	store := s.stores[mode]
	if tx, ok := s.lock.(clients.TxHolder); ok && tx.Tx() != nil {
		store = store.WithTx(tx.Tx())
	}
	if err := store.Claim(ctx, l.Token); err != nil {
		return err
	}
	read, err := store.ReadFenced(ctx, l.Fence)
	if err != nil {
		return err
	}
	if d == DefenceLeaseCheck && !l.StillValid(time.Now) {
		return errors.New("the lease check found a fresh lease expired")
	}
	ok, err := store.Write(ctx, read, read+1, l.Fence, l.Token)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("storage (%s) refused the only client's write", mode)
	}
	return nil
}

// renewals times the watchdog's work: one lease held for the point, the
// lock's Extend called back to back on it.
func renewals(ctx context.Context, d time.Duration, lk clients.Lock, key string) (Latency, error) {
	l, err := lk.Acquire(ctx, key, ttl)
	if err != nil {
		return Latency{}, fmt.Errorf("acquire: %w", err)
	}
	lat, err := timeOp(ctx, d, func() error {
		nl, err := lk.Extend(ctx, l, ttl)
		if err != nil {
			return fmt.Errorf("extend: %w", err)
		}
		l = nl
		return nil
	})
	if rerr := lk.Release(ctx, l); rerr != nil && err == nil {
		err = fmt.Errorf("release: %w", rerr)
	}
	return lat, err
}
