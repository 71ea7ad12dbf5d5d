package locktest_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clients/locktest"
	"github.com/locksim/locksim/env"
)

func TestMain(m *testing.M) {
	// go-redis logs every dial it gives up on; the unreachable check
	// makes dozens on purpose.
	redis.SetLogger(quiet{})
	code := m.Run()
	env.Cleanup()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// singleInstance is why the Redis page's single-instance pattern (lock
// redis and its copies) fails validity-bound.
const singleInstance = "the single-instance pattern has no validity check at acquire: with replies delayed past the TTL, it grants a lease already spent"

// expectFail lists, for every lock that is meant to fail some checks, the
// checks it fails and why. A lock not listed must pass every check; a
// listed lock must fail exactly the listed checks, so a fix (or a new
// breakage) shows up here. Every mutant is listed with at least one check
// but postgres-xact-outside, whose defect the Lock interface cannot show.
var expectFail = map[string]map[string]string{
	// Non-mutants.
	"postgres-pooled": {
		"release-frees":  "the pitfall it reproduces: the unlock lands on another pooled connection and the lock leaks",
		"stale-release":  "its Release never refuses (it ignores pg_advisory_unlock's false)",
		"forged-release": "its Release never refuses (it ignores pg_advisory_unlock's false)",
		"extend":         "the release of the extended lease leaks the lock, so no one else gets it",
		"extend-lost":    "its Extend sends nothing and never refuses",
	},
	"redislock": {
		"validity-bound": "bsm/redislock has no validity check: a grant whose replies came after the TTL ran out is returned as held",
	},
	// The Redis page's single-instance pattern grants whatever SET NX
	// grants, however long the request took: validity checked at acquire
	// is Redlock's step 3, which it does not promise (clients/promises.go).
	"redis": {
		"validity-bound": singleInstance,
	},
	"redis-sentinel": {
		"validity-bound": singleInstance,
	},
	// Mutants: each fails the check of the defence it breaks (and the
	// copies of redis, what redis fails).
	"redis-extend-reset": {
		"extend-lost":    "its extend re-creates a released key (redlock-rb 0.1.6's script): a's extend of its released lease is granted, and b is refused",
		"validity-bound": singleInstance,
	},
	"redis-plain-del": {
		// Its release is a plain DEL, and so is the undo of a refused
		// acquire (Redlock deletes its key on every node when it fails):
		// a rival's refused acquire deletes the holder's key.
		"exclusive":      "b's refused acquire undoes with a plain DEL, deleting a's key: c is granted",
		"wait-release":   "b's refused tries delete a's key with a plain DEL, and a's release (a plain DEL) deletes the key b was then granted: b's release is refused",
		"stale-release":  "a plain DEL deletes whoever holds the key",
		"forged-release": "a plain DEL deletes whoever holds the key",
		"extend":         "b's refused acquire deletes a's key, so a's release of its extended lease is refused",
		"extend-lost":    "c's refused acquire deletes b's key, so b's release is refused",
		"expiry":         "b's refused acquire deletes a's key at once, and a's release of its expired lease deletes b's",
		"validity-bound": singleInstance,
	},
	"postgres-shared": {
		"exclusive":      "the shared advisory lock is granted to every session at once",
		"stale-release":  "a third session is granted the shared lock too",
		"forged-release": "a third session is granted the shared lock too",
		"extend":         "a second session is granted the shared lock while the first holds it",
		"extend-lost":    "a third session is granted the shared lock too",
		"unreachable":    "the rival is granted the shared lock instead of being refused",
	},
	"redlock-no-validity": {
		"validity-bound": "it skips the validity check: with replies delayed past the TTL, it grants a lease already spent",
	},
	"redlock-lease-from-replies": {
		"validity-bound": "the lease is counted from the replies, not from before the request: with replies delayed, its validity ends after the TTL",
	},
	"redlock-wallclock": {
		"expiry": "the lease is timed by the client's wall clock, which here runs at half speed: it is still valid when the next client is granted the lock",
	},
	// postgres-xact-outside: its defect (the protected write runs outside
	// the lock's transaction) is invisible through the Lock interface;
	// scenario postgres-xact-side-effect catches it. It must pass every
	// check, as postgres-xact does.
}

// halfSpeed is a wall clock that runs at half speed from base: a correct
// lock ignores it (it times leases on CLOCK_MONOTONIC); a lock that times
// its lease by the wall clock (redlock-wallclock) believes in it twice as
// long as the server keeps the key.
func halfSpeed() func() time.Time {
	base := time.Now()
	return func() time.Time { return base.Add(time.Since(base) / 2) }
}

// servers are the lock servers the suite runs on: each lock's backend
// started once for each number of nodes its locks want (one set of five
// Redis nodes for the Redlock family, one Redis node for the single-node
// locks, one PostgreSQL cluster, one etcd member), through package
// backends, as a run starts them.
type servers struct {
	tb   testing.TB
	net  *env.Network
	sets map[serverSet]backends.Servers
}

type serverSet struct {
	backend clients.Backend
	nodes   int
}

func startServers(t testing.TB) *servers {
	t.Helper()
	s := &servers{tb: t, net: env.NewNetwork(), sets: map[serverSet]backends.Servers{}}
	t.Cleanup(func() {
		for _, set := range s.sets {
			set.Close()
		}
		s.net.Close()
	})
	return s
}

// setup builds the Config, the Options and the links for one lock: every
// client of the lock reaches each server through one toxiproxy link,
// which the suite's Cut disables and its Delay slows. ok is false for a
// lock whose backend is not registered.
func (s *servers) setup(t testing.TB, spec clients.Spec) (_ clients.Config, _ locktest.Options, ok bool) {
	b := backends.Of(spec)
	if b == nil {
		return clients.Config{}, locktest.Options{}, false
	}
	key := serverSet{spec.Backend, backends.DefaultNodes(spec)}
	set, started := s.sets[key]
	if !started {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var err error
		set, err = b.Start(ctx, backends.Options{Nodes: key.nodes, Clients: 3, Dir: s.tb.TempDir(), Network: s.net})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s.sets[key] = set
	}
	wall := halfSpeed()
	cfg := clients.Config{WallClock: wall}
	opts := locktest.Options{WallClock: wall, Quorum: key.nodes > 1, NoExpiry: spec.NoExpiry, LocalExtend: spec.LocalExtend}
	if spec.Backend == clients.MemcachedBackend {
		// Whole seconds, and a lease one second shorter than its TTL: 3 s
		// leaves 2 s, more than the extend check's 60% of the TTL.
		opts.ShortTTL = 3 * time.Second
	}
	var links []*env.Link
	link := func(node, upstream string) (string, error) {
		l, err := s.net.AddLink(spec.Name+"-"+node, upstream)
		if err != nil {
			return "", err
		}
		links = append(links, l)
		return l.Listen, nil
	}
	if err := set.Connect(&cfg, link); err != nil {
		t.Fatal(err)
	}
	opts.Cut = func(t testing.TB) func() {
		for _, l := range links {
			l.Disable()
		}
		return func() {
			for _, l := range links {
				if err := l.Enable(); err != nil {
					t.Errorf("restore link %s: %v", l.Name, err)
				}
			}
		}
	}
	opts.Delay = func(t testing.TB, d time.Duration) func() {
		for _, l := range links {
			if err := l.AddToxic("locktest-delay", "latency", "downstream", map[string]any{"latency": d.Milliseconds()}); err != nil {
				t.Fatal(err)
			}
		}
		return func() {
			for _, l := range links {
				if err := l.RemoveToxic("locktest-delay"); err != nil {
					t.Errorf("restore link %s: %v", l.Name, err)
				}
			}
		}
	}
	return cfg, opts, true
}

// TestConformance runs locktest on every registered lock, mutants
// included, each against real servers, its backend's (the Redis nodes its
// Spec asks for, one when it says 0; a PostgreSQL cluster; an etcd
// cluster). A lock whose backend is not registered fails, with the
// reason: skipping it would pass without checking it. How long each
// lock's suite takes is logged here and measured by BenchmarkConformance
// (a figure, not a pass/fail line on a shared machine).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server, PostgreSQL and etcd")
	}
	srv := startServers(t)
	table := map[string][]locktest.Result{}
	var order []string
	for _, name := range clients.Names() {
		spec, err := clients.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			cfg, opts, ok := srv.setup(t, spec)
			if !ok {
				t.Fatalf("lock %s: backend %q is not registered (package backends)", name, spec.Backend)
			}
			newLock := lockMaker(spec, cfg)
			start := time.Now()
			rs := locktest.Run(t, newLock, opts)
			took := time.Since(start)
			table[name], order = rs, append(order, name)
			var each []string
			for _, r := range rs {
				each = append(each, fmt.Sprintf("%s %v", r.Check, r.Took.Round(time.Millisecond)))
			}
			t.Logf("suite took %v: %s", took.Round(time.Millisecond), strings.Join(each, ", "))
			want := expectFail[name]
			if spec.Mutant != "" && len(want) == 0 && name != "postgres-xact-outside" {
				t.Errorf("mutant %s (breaks %s) has no check listed that it fails", name, spec.Mutant)
			}
			for _, r := range rs {
				why, expected := want[r.Check]
				switch {
				case r.Failed && !expected:
					t.Errorf("%s: FAIL: %s", r.Check, strings.Join(r.Log, "\n\t"))
				case !r.Failed && expected:
					t.Errorf("%s: passed, but %s is expected to fail it (%s): %s", r.Check, name, why, strings.Join(r.Log, "; "))
				case r.Failed:
					t.Logf("%s: fails as expected (%s): %s", r.Check, why, strings.Join(r.Log, "; "))
				case r.Skipped:
					t.Logf("%s: skipped: %s", r.Check, strings.Join(r.Log, "; "))
				}
			}
			for c := range want {
				found := false
				for _, r := range rs {
					found = found || r.Check == c
				}
				if !found {
					t.Errorf("expectFail names check %q, which locktest does not have", c)
				}
			}
		})
	}
	// The table, for the record.
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "lock")
	for _, c := range locktest.Checks() {
		fmt.Fprintf(&b, " %-14s", c)
	}
	sort.Strings(order)
	for _, name := range order {
		fmt.Fprintf(&b, "\n%-22s", name)
		for _, r := range table[name] {
			s := "ok"
			switch {
			case r.Failed:
				s = "FAIL"
			case r.Skipped:
				s = "-"
			}
			fmt.Fprintf(&b, " %-14s", s)
		}
	}
	t.Logf("conformance:\n%s", b.String())
}

// TestLockAPI runs the subtest form, TestLock, on one lock that passes
// every check.
func TestLockAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	srv := startServers(t)
	// redsync: a library's lock (redislock, used before, has no validity
	// check and fails validity-bound).
	spec, err := clients.Lookup("redsync")
	if err != nil {
		t.Fatal(err)
	}
	cfg, opts, _ := srv.setup(t, spec)
	locktest.TestLock(t, func(t testing.TB) clients.Lock {
		l, err := spec.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}, opts)
}

// BenchmarkConformance times the whole suite on each registered lock
// (mutants included), against the same servers as TestConformance, and
// reports s/suite: the figure to hold against the budget of 10 s a lock.
// How the checks come out is TestConformance's business, not this one's.
func BenchmarkConformance(b *testing.B) {
	srv := startServers(b)
	for _, name := range clients.Names() {
		spec, err := clients.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		// Once a lock: b.Run calls its function more than once (N=1, then
		// the N asked for), and a link is added once.
		cfg, opts, ok := srv.setup(b, spec)
		if !ok {
			b.Fatalf("lock %s: backend %q is not registered (package backends)", name, spec.Backend)
		}
		b.Run(name, func(b *testing.B) {
			newLock := lockMaker(spec, cfg)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				locktest.Run(b, newLock, opts)
			}
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/suite")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// lockMaker returns a function that makes a lock of spec on cfg's servers
// and closes it when the test that asked for it ends.
func lockMaker(spec clients.Spec, cfg clients.Config) func(t testing.TB) clients.Lock {
	return func(t testing.TB) clients.Lock {
		l, err := spec.New(cfg)
		if err != nil {
			t.Fatalf("new %s: %v", spec.Name, err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
}
