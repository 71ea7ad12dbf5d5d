package cost

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
)

func TestPercentiles(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- { // 1..100µs, unsorted
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	got := percentiles(s)
	if got.P50 != 50*time.Microsecond || got.P99 != 99*time.Microsecond || got.Samples != 100 {
		t.Errorf("percentiles of 1..100µs: %+v, want p50 50µs, p99 99µs, 100 samples", got)
	}
	if one := percentiles([]time.Duration{7}); one.P50 != 7 || one.P99 != 7 {
		t.Errorf("one sample: %+v", one)
	}
	if none := percentiles(nil); none != (Latency{}) {
		t.Errorf("no sample: %+v", none)
	}
}

func TestOptionsOf(t *testing.T) {
	opts, err := OptionsOf(DefaultLocks)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range opts {
		keys = append(keys, o.Key)
	}
	want := "redis redlock/none redlock/everysec redlock/always redsync etcd zookeeper postgres-session postgres-session/pgbouncer postgres-xact postgres-xact/pgbouncer"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("options:\n got %s\nwant %s", got, want)
	}
	_, err = ParseLocks("redis, redis ,nope")
	var ie *input.Error
	if !errors.As(err, &ie) || ie.Name != "locks" || !strings.Contains(err.Error(), `unknown lock "nope"`) {
		t.Errorf("ParseLocks with an unknown lock: %v, want an input error of locks naming it", err)
	}
	if l, err := ParseLocks("redis, redis ,postgres-xact"); err != nil || strings.Join(l, ",") != "redis,postgres-xact" {
		t.Errorf("ParseLocks: %v, %v", l, err)
	}
}

// TestCatalogueMarks: each story is marked at the option and defence it
// is told with, under the fault that causes it, and a story told with
// what sim cost does not measure is not marked at all.
func TestCatalogueMarks(t *testing.T) {
	opts, err := OptionsOf(DefaultLocks)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := CatalogueMarks(opts)
	if err != nil {
		t.Fatal(err)
	}
	byStory := map[string][]Mark{}
	for _, m := range marks {
		byStory[m.Story] = append(byStory[m.Story], m)
	}
	has := func(story string, want Mark) {
		t.Helper()
		want.Story = story
		for _, m := range byStory[story] {
			if m == want {
				return
			}
		}
		t.Errorf("%s: marks %+v, want one %+v", story, byStory[story], want)
	}
	has("redlock-crash-restart", Mark{Option: "redlock/none", Defence: DefenceNone, Fault: "crash", Verdict: "unsafe"})
	has("redlock-crash-restart-fsync", Mark{Option: "redlock/always", Defence: DefenceNone, Fault: "crash", Verdict: "safe"})
	has("redlock-crash-restart-everysec", Mark{Option: "redlock/everysec", Defence: DefenceNone, Fault: "crash", Verdict: "safe"})
	has("fenced-pause", Mark{Option: "redis", Defence: DefenceFenced, Fault: "pause", Verdict: "safe"})
	has("redis-watchdog-pause", Mark{Option: "redis", Defence: DefenceWatchdog, Fault: "pause", Verdict: "unsafe"})
	has("redis-ttl-expiry", Mark{Option: "redis", Defence: DefenceNone, Fault: FaultNone, Verdict: "unsafe"})
	has("redlock-token-cas", Mark{Option: "redlock/none", Defence: DefenceTokenCAS, Fault: "pause", Verdict: "safe"})
	for story, why := range map[string]string{
		"fenced-redis-incr-crash":        "its fence is Redis INCR, not measured",
		"postgres-pgbouncer-transaction": "a session lock through transaction pooling, not measured",
		"redis-unsafe-release":           "told with the mutant redis-plain-del, not among the options",
	} {
		if len(byStory[story]) > 0 {
			t.Errorf("%s marked %+v; want no mark: %s", story, byStory[story], why)
		}
	}
}

func TestCSV(t *testing.T) {
	r := &Result{
		Floors: []Floor{{Name: FloorRedis, Latency: Latency{P50: 40 * time.Microsecond, P99: 90 * time.Microsecond, Samples: 10}}},
		Rows: []Row{
			{Option: Option{Key: "redis", Lock: "redis"}, Floor: FloorRedis,
				AcquireRelease: Latency{P50: 80 * time.Microsecond, P99: 200 * time.Microsecond, Samples: 10}, RatioP50: 2, RatioP99: 2.2,
				OneLock: Rate{PerSec: 100, Granted: 100}, FourLocks: Rate{PerSec: 300, Granted: 300},
				Defences: map[string]Latency{DefenceNone: {P50: 300 * time.Microsecond}, DefenceFenced: {P50: 450 * time.Microsecond}, DefenceWatchdog: {P50: 45 * time.Microsecond}}},
			{Option: Option{Key: "etcd", Lock: "etcd"}, Err: "starting its servers: no etcd"},
		},
	}
	recs, err := csv.NewReader(bytes.NewReader(r.CSV())).ReadAll()
	if err != nil {
		t.Fatalf("cost.csv does not parse: %v", err)
	}
	find := func(option, measure string) []string {
		for _, rec := range recs {
			if rec[0] == option && rec[3] == measure {
				return rec
			}
		}
		t.Fatalf("no row %s %s in\n%s", option, measure, r.CSV())
		return nil
	}
	col := func(rec []string, name string) string {
		for i, h := range CSVHeader {
			if h == name {
				return rec[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	if ar := find("redis", MeasureAcquireRelease); col(ar, "p50_us") != "80.0" || col(ar, "ratio_p50") != "2.00" || col(ar, "floor") != FloorRedis {
		t.Errorf("acquire-release row %v", ar)
	}
	if f := find("redis", MeasureSection+DefenceFenced); col(f, "extra_p50_us") != "150.0" {
		t.Errorf("fenced row %v: extra over the plain section 150µs", f)
	}
	if w := find("redis", MeasureWatchdog); col(w, "extra_p50_us") != "45.0" {
		t.Errorf("watchdog row %v: extra is one renewal, 45µs", w)
	}
	if e := find("etcd", MeasureAcquireRelease); col(e, "error") == "" {
		t.Errorf("etcd's row does not say why it was not measured: %v", e)
	}
	if got := find("redis", MeasureOneLock); col(got, "per_sec") != "100.0" {
		t.Errorf("one-lock row %v", got)
	}
}

// TestEveryLockHasAFloor: every registered lock's servers have a floor
// (one round trip) that sim cost measures beside it, so that no lock's
// multiple reads 0 (memcached had none until 2026-12-06).
func TestEveryLockHasAFloor(t *testing.T) {
	for _, name := range clients.Names() {
		spec, _ := clients.Lookup(name)
		if f := floorOf(spec.Backend); f == "" {
			t.Errorf("lock %s (servers %s): no floor", name, spec.Backend)
		}
	}
}
