package clockshim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeClock replaces the real clock for the duration of a test.
func fakeClock(t *testing.T, start time.Time) *int64 {
	t.Helper()
	now := start.UnixNano()
	old := realNow
	realNow = func() int64 { return now }
	t.Cleanup(func() { realNow = old })
	return &now
}

func newControl(t *testing.T) *Control {
	t.Helper()
	c, err := NewControl(filepath.Join(t.TempDir(), "clock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOffsetJumpReset(t *testing.T) {
	now := fakeClock(t, time.Unix(1_700_000_000, 0))
	c := newControl(t)
	if got := c.Now().UnixNano(); got != *now {
		t.Fatalf("fresh control: Now = %d, want real %d", got, *now)
	}
	c.SetOffset(60 * time.Second)
	if c.Offset() != 60*time.Second {
		t.Fatalf("Offset = %v, want 60s", c.Offset())
	}
	if got := c.Now().Sub(time.Unix(0, *now)); got != 60*time.Second {
		t.Fatalf("Now - real = %v, want 60s", got)
	}
	c.Jump(-90 * time.Second)
	if c.Offset() != -30*time.Second || c.Skew() != -30*time.Second {
		t.Fatalf("after Jump(-90s): Offset %v Skew %v, want -30s", c.Offset(), c.Skew())
	}
	*now += int64(time.Hour) // the offset stays put as real time passes
	if c.Skew() != -30*time.Second {
		t.Fatalf("Skew after an hour = %v, want -30s", c.Skew())
	}
	c.SetRate(3)
	c.Reset()
	if c.Offset() != 0 || c.Rate() != 1 || c.Skew() != 0 {
		t.Fatalf("after Reset: offset %v rate %v skew %v", c.Offset(), c.Rate(), c.Skew())
	}
}

func TestSetRateRebasesWithoutJump(t *testing.T) {
	now := fakeClock(t, time.Unix(1_700_000_000, 0))
	c := newControl(t)
	c.SetOffset(5 * time.Second)
	c.SetRate(2)
	if c.Rate() != 2 {
		t.Fatalf("Rate = %v, want 2", c.Rate())
	}
	if c.Skew() != 5*time.Second {
		t.Fatalf("SetRate jumped the clock: skew %v, want 5s", c.Skew())
	}
	*now += int64(10 * time.Second)
	// 10 real seconds at rate 2: the shifted clock gained 10 s more.
	if c.Skew() != 15*time.Second {
		t.Fatalf("after 10s at rate 2: skew %v, want 15s", c.Skew())
	}
	before := c.Now()
	c.SetRate(0.5)
	if !c.Now().Equal(before) {
		t.Fatalf("SetRate(0.5) jumped the clock from %v to %v", before, c.Now())
	}
	if c.Offset() != 15*time.Second {
		t.Fatalf("drift not folded into the offset: %v, want 15s", c.Offset())
	}
	*now += int64(10 * time.Second)
	if c.Skew() != 10*time.Second { // lost 5 s over 10 s at half speed
		t.Fatalf("after 10s at rate 0.5: skew %v, want 10s", c.Skew())
	}
	// A Jump while a rate runs adds to the offset and keeps the rate.
	c.Jump(time.Minute)
	if c.Skew() != 70*time.Second || c.Rate() != 0.5 {
		t.Fatalf("after Jump: skew %v rate %v", c.Skew(), c.Rate())
	}
	// Rate 0 stops the clock.
	c.SetRate(0)
	stopped := c.Now()
	*now += int64(time.Hour)
	if d := c.Now().Sub(stopped); d < 0 || d > 4*time.Microsecond { // 1e-9 speed: 3.6 µs an hour
		t.Fatalf("stopped clock moved %v in an hour", d)
	}
	// Back to normal speed: no jump, then it tracks real time.
	c.SetRate(1)
	at := c.Now()
	*now += int64(time.Second)
	if d := c.Now().Sub(at); d != time.Second {
		t.Fatalf("rate 1 after stop: moved %v in 1s", d)
	}
}

func TestMulDivMatches128BitArithmetic(t *testing.T) {
	vals := []int64{0, 1, -1, 999_999_999, 1_000_000_000, -1_000_000_001,
		int64(time.Hour), -int64(time.Hour) * 24 * 365, 1 << 40, math.MaxInt64, math.MinInt64,
		math.MaxInt64 / 3, -math.MaxInt64 / 7}
	lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	for _, a := range vals {
		for _, b := range vals {
			want := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
			want.Quo(want, big.NewInt(ppb)) // truncates toward zero, like C
			if want.Cmp(lo) < 0 {
				want = lo
			} else if want.Cmp(hi) > 0 {
				want = hi
			}
			if got := mulDiv(a, b); got != want.Int64() {
				t.Errorf("mulDiv(%d, %d) = %d, want %d", a, b, got, want.Int64())
			}
		}
	}
}

func TestFileLayout(t *testing.T) {
	now := fakeClock(t, time.Unix(1_700_000_000, 0))
	c := newControl(t)
	c.SetOffset(7 * time.Second)
	c.SetRate(1.5)
	b, err := os.ReadFile(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != FileSize {
		t.Fatalf("file is %d bytes, want %d", len(b), FileSize)
	}
	w := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
	if seq := w(0); seq == 0 || seq%2 != 0 {
		t.Errorf("seq = %d, want even and > 0", seq)
	}
	if w(1) != int64(7*time.Second) || w(2) != *now || w(3) != 1_500_000_000 {
		t.Errorf("file = offset %d base %d rate %d", w(1), w(2), w(3))
	}
	if w(4) != Layout || w(5) != 1_500_000_000 || w(8) != ppb {
		t.Errorf("file = layout %d, monotonic rate %d (before: %d), want %d, 1.5e9 (1e9)", w(4), w(5), w(8), Layout)
	}
	// A second mapping (another process's view) reads the same state.
	o, err := OpenControl(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Offset() != 7*time.Second || o.Rate() != 1.5 {
		t.Errorf("OpenControl sees offset %v rate %v", o.Offset(), o.Rate())
	}
}

func TestSeqlockNoTornReads(t *testing.T) {
	c := newControl(t)
	c.store(state{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // every state written has offset == base == rate
		defer wg.Done()
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.mu.Lock()
			c.store(state{i, i, i, i, i, i, i, i})
			c.mu.Unlock()
		}
	}()
	for range 200_000 {
		st := c.load()
		if st != (state{st.offset, st.offset, st.offset, st.offset, st.offset, st.offset, st.offset, st.offset}) {
			close(stop)
			wg.Wait()
			t.Fatalf("torn read: %+v", st)
		}
	}
	close(stop)
	wg.Wait()
}

const probeC = `#include <stdio.h>
#include <time.h>
#include <sys/time.h>
int main(void) {
	struct timespec r, c, m; struct timeval tv;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_REALTIME_COARSE, &c);
	clock_gettime(CLOCK_MONOTONIC, &m);
	gettimeofday(&tv, NULL);
	time_t t = time(NULL);
	printf("%lld %lld %lld %lld %lld\n",
		(long long)r.tv_sec*1000000000LL + r.tv_nsec,
		(long long)c.tv_sec*1000000000LL + c.tv_nsec,
		(long long)m.tv_sec*1000000000LL + m.tv_nsec,
		(long long)tv.tv_sec*1000000000LL + tv.tv_usec*1000LL,
		(long long)t*1000000000LL);
	return 0;
}
`

// TestShimInAChild runs a small C program under the compiled shim and
// checks every clock it reads against the Control's own Now.
func TestShimInAChild(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler: make test installs gcc")
	}
	lib, err := Library()
	if err != nil {
		t.Fatal(err)
	}
	if lib2, err := Library(); err != nil || lib2 != lib {
		t.Fatalf("second Library() = %q, %v; want %q", lib2, err, lib)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe.c"), []byte(probeC), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	if out, err := exec.Command("cc", "-O2", "-o", probe, filepath.Join(dir, "probe.c")).CombinedOutput(); err != nil {
		t.Fatalf("cc probe: %v\n%s", err, out)
	}
	c := newControl(t)
	env, err := Env(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	run := func() []int64 {
		t.Helper()
		cmd := exec.Command(probe)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		var v []int64
		for _, f := range strings.Fields(string(out)) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			v = append(v, n)
		}
		return v
	}
	check := func(name string) {
		t.Helper()
		lo := c.Now().UnixNano()
		v := run()
		hi := c.Now().UnixNano()
		if v[0] < lo || v[0] > hi {
			t.Errorf("%s: CLOCK_REALTIME %d outside Control.Now [%d, %d]", name, v[0], lo, hi)
		}
		// The coarse clock lags by up to a tick (4 ms at HZ=250), times the rate.
		if v[1] < lo-int64(100*time.Millisecond) || v[1] > hi {
			t.Errorf("%s: CLOCK_REALTIME_COARSE %d outside [%d-100ms, %d]", name, v[1], lo, hi)
		}
		if v[3] < lo-1000 || v[3] > hi {
			t.Errorf("%s: gettimeofday %d outside [%d, %d]", name, v[3], lo, hi)
		}
		if v[4] < lo-int64(time.Second) || v[4] > hi {
			t.Errorf("%s: time() %d outside [%d-1s, %d]", name, v[4], lo, hi)
		}
	}
	check("no offset")
	base := run()
	c.SetOffset(3 * time.Hour)
	check("offset +3h")
	shifted := run()
	if d := time.Duration(shifted[0] - base[0]); d < 3*time.Hour || d > 3*time.Hour+10*time.Second {
		t.Errorf("REALTIME moved %v with a +3h offset", d)
	}
	// CLOCK_MONOTONIC passes through: it moved by real time only.
	if d := time.Duration(shifted[2] - base[2]); d < 0 || d > 10*time.Second {
		t.Errorf("CLOCK_MONOTONIC moved %v with a +3h offset; it must not be shifted", d)
	}
	c.SetRate(5)
	time.Sleep(20 * time.Millisecond)
	check("rate 5")
	c.Jump(-6 * time.Hour)
	check("rate 5, offset -3h")
	c.Reset()
	check("reset")

	// Without LOCKSIM_CLOCK_FILE the shim passes time through.
	cmd := exec.Command(probe)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib)
	c.SetOffset(time.Hour)
	lo := time.Now().UnixNano()
	out, err := cmd.Output()
	hi := time.Now().UnixNano()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if r < lo || r > hi {
		t.Errorf("no control file: REALTIME %d outside real [%d, %d]", r, lo, hi)
	}
}

func TestLibraryOverride(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/clockshim.so")
	if _, err := Library(); err == nil || !strings.Contains(err.Error(), EnvLibrary) {
		t.Fatalf("Library with a missing override = %v, want an error naming %s", err, EnvLibrary)
	}
	if _, err := Env("x"); err == nil {
		t.Fatal("Env with a missing override: want an error")
	}
}

func TestLibraryNeedsCompiler(t *testing.T) {
	libMu.Lock()
	saved := libPath
	libPath = ""
	libMu.Unlock()
	defer func() { libMu.Lock(); libPath = saved; libMu.Unlock() }()
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing cached there
	t.Setenv("PATH", t.TempDir())           // and no cc
	_, err := Library()
	if err == nil || !strings.Contains(err.Error(), "needs a C compiler") {
		t.Fatalf("Library without cc = %v, want the C compiler error", err)
	}
}

func TestMonotonicRateIsContinuousAndNeverBack(t *testing.T) {
	fakeClock(t, time.Unix(1_700_000_000, 0))
	mono := int64(5_000 * time.Second)
	oldMono, oldBoot := realMono, realBoot
	realMono = func() int64 { return mono }
	realBoot = func() int64 { return mono + int64(time.Minute) }
	t.Cleanup(func() { realMono, realBoot = oldMono, oldBoot })
	c := newControl(t)
	seen := map[int64]int64{} // real -> shifted, for RealMonotonic
	note := func() int64 { v := c.Monotonic(); seen[mono] = v; return v }
	if note() != mono {
		t.Fatalf("fresh control: Monotonic %d, want the real %d", c.Monotonic(), mono)
	}
	at := note()
	c.SetRate(0.5)
	if note() != at {
		t.Fatalf("SetRate(0.5) moved the monotonic clock from %d to %d", at, c.Monotonic())
	}
	mono += int64(10 * time.Second)
	if d := time.Duration(note() - at); d != 5*time.Second {
		t.Fatalf("10 s at rate 0.5: monotonic moved %v, want 5s", d)
	}
	// Heal as ClockDrift does: the wall clock steps back, the monotonic
	// clock goes on from where it stands.
	before := c.Monotonic()
	skew := c.Skew()
	c.SetRate(1)
	c.Jump(-skew)
	if note() != before {
		t.Fatalf("heal moved the monotonic clock from %d to %d", before, c.Monotonic())
	}
	if c.Skew() != 0 {
		t.Fatalf("heal left the wall clock %v off", c.Skew())
	}
	mono += int64(time.Second)
	if d := time.Duration(note() - before); d != time.Second {
		t.Fatalf("after heal: monotonic moved %v in 1 s, want 1s", d)
	}
	// A fast drift, then Reset: still no step.
	c.SetRate(2)
	mono += int64(time.Second)
	before = note()
	c.Reset()
	if note() != before {
		t.Fatalf("Reset moved the monotonic clock from %d to %d", before, c.Monotonic())
	}
	mono += int64(time.Second)
	note()
	// RealMonotonic maps every shifted reading back through the rates set,
	// and a future one at the rate now in force.
	for real, v := range seen {
		if got := c.RealMonotonic(v); got != real {
			t.Errorf("RealMonotonic(%d) = %d, want the real %d", v, got, real)
		}
	}
	if got, want := c.RealMonotonic(c.Monotonic()+int64(time.Hour)), mono+int64(time.Hour); got != want {
		t.Errorf("RealMonotonic(an hour ahead) = %d, want %d", got, want)
	}
	// A reader in another process (the worker) knows the rate in force.
	o, err := OpenControl(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Monotonic() != c.Monotonic() || o.RealMonotonic(c.Monotonic()) != mono {
		t.Errorf("OpenControl: Monotonic %d RealMonotonic %d, want %d and %d", o.Monotonic(), o.RealMonotonic(c.Monotonic()), c.Monotonic(), mono)
	}
}

// samplerC prints, every millisecond for argv[1] ms of CLOCK_MONOTONIC_RAW,
// one line: RAW MONOTONIC MONOTONIC_COARSE BOOTTIME REALTIME.
const samplerC = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long long rd(clockid_t id) { struct timespec ts; clock_gettime(id, &ts); return ts.tv_sec*1000000000LL + ts.tv_nsec; }
int main(int argc, char **argv) {
	long long end = rd(CLOCK_MONOTONIC_RAW) + atoll(argv[1]) * 1000000LL;
	struct timespec ms = {0, 1000000};
	for (;;) {
		long long raw = rd(CLOCK_MONOTONIC_RAW);
		printf("%lld %lld %lld %lld %lld\n", raw, rd(CLOCK_MONOTONIC), rd(CLOCK_MONOTONIC_COARSE), rd(CLOCK_BOOTTIME), rd(CLOCK_REALTIME));
		if (raw > end) return 0;
		nanosleep(&ms, NULL);
	}
}
`

// waiterC waits argv[1] ms of its CLOCK_MONOTONIC in each way a program
// computes a deadline from it, and prints each wait as that clock measured
// it: relative sleeps, absolute ones (TIMER_ABSTIME), a cond made with a
// CLOCK_MONOTONIC attribute (as HotSpot's and CPython's), and the
// clock-taking waits.
const waiterC = `#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long long now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec*1000000000LL + ts.tv_nsec; }
static struct timespec at(long long t) { struct timespec ts = {t / 1000000000LL, t % 1000000000LL}; return ts; }
int main(int argc, char **argv) {
	long long d = atoll(argv[1]) * 1000000LL, t;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_condattr_t a; pthread_condattr_init(&a); pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_t c; pthread_cond_init(&c, &a);
	sem_t s; sem_init(&s, 0, 0);
	struct timespec ts;
	t = now(); ts = at(d); nanosleep(&ts, NULL); printf("nanosleep %lld\n", now() - t);
	t = now(); usleep(d / 1000); printf("usleep %lld\n", now() - t);
	t = now(); ts = at(t + d); clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); printf("clock_nanosleep_abstime %lld\n", now() - t);
	pthread_mutex_lock(&m);
	t = now(); ts = at(t + d); while (pthread_cond_timedwait(&c, &m, &ts) == 0) {} printf("pthread_cond_timedwait %lld\n", now() - t);
	t = now(); ts = at(t + d); while (pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts) == 0) {} printf("pthread_cond_clockwait %lld\n", now() - t);
	pthread_mutex_unlock(&m);
	t = now(); ts = at(t + d); sem_clockwait(&s, CLOCK_MONOTONIC, &ts); printf("sem_clockwait %lld\n", now() - t);
	t = now(); poll(NULL, 0, (int)(d / 1000000)); printf("poll %lld\n", now() - t);
	return 0;
}
`

// compile builds a C program for a test.
func compile(t *testing.T, name, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler: make test installs gcc")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name+".c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O2", "-o", bin, filepath.Join(dir, name+".c")}, flags...)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, out)
	}
	return bin
}

// TestShimDriftsMonotonicInAChild drifts a running program's clocks at
// rate 0.5, then heals as ClockDrift does (rate 1, the wall clock stepped
// back): its monotonic clocks slow with the wall clock, never step at the
// start, and never go back at heal; CLOCK_MONOTONIC_RAW stays real.
func TestShimDriftsMonotonicInAChild(t *testing.T) {
	bin := compile(t, "sampler", samplerC)
	c := newControl(t)
	env, err := Env(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "900")
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	from := clock(unix.CLOCK_MONOTONIC_RAW)
	c.SetRate(0.5)
	time.Sleep(400 * time.Millisecond)
	to := clock(unix.CLOCK_MONOTONIC_RAW)
	skew := c.Skew()
	c.SetRate(1)
	c.Jump(-skew)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var rows [][]int64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r []int64
		for _, f := range strings.Fields(line) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			r = append(r, n)
		}
		rows = append(rows, r)
	}
	if len(rows) < 100 {
		t.Fatalf("only %d samples", len(rows))
	}
	names := []string{"RAW", "MONOTONIC", "MONOTONIC_COARSE", "BOOTTIME"}
	for i := 1; i < len(rows); i++ {
		for k := range names {
			if rows[i][k] < rows[i-1][k] {
				t.Errorf("%s went back by %v between samples %d and %d", names[k], time.Duration(rows[i-1][k]-rows[i][k]), i-1, i)
			}
		}
		// No step of the monotonic clock at inject or heal: between two
		// samples it moves no more than RAW does, and not less than half.
		dr, dm := rows[i][0]-rows[i-1][0], rows[i][1]-rows[i-1][1]
		if dm > dr+int64(time.Millisecond) || dm < dr/2-int64(time.Millisecond) {
			t.Errorf("CLOCK_MONOTONIC moved %v while RAW moved %v (sample %d)", time.Duration(dm), time.Duration(dr), i)
		}
	}
	// Inside the drift, the monotonic clocks and the wall clock run at half
	// speed; RAW at full speed.
	in := func(lo, hi int64) (a, b []int64) {
		for _, r := range rows {
			if r[0] >= lo && a == nil {
				a = r
			}
			if r[0] <= hi {
				b = r
			}
		}
		return a, b
	}
	a, b := in(from+int64(20*time.Millisecond), to-int64(20*time.Millisecond))
	raw := float64(b[0] - a[0])
	for k, name := range []string{"MONOTONIC", "MONOTONIC_COARSE", "BOOTTIME", "REALTIME"} {
		if r := float64(b[k+1]-a[k+1]) / raw; r < 0.45 || r > 0.55 {
			t.Errorf("during the drift %s ran at %.3f of RAW's speed, want 0.5", name, r)
		}
	}
	// After heal: full speed again, and the monotonic clock stays behind.
	last := rows[len(rows)-1]
	if lag := time.Duration((last[0] - last[1]) - (rows[0][0] - rows[0][1])); lag < 150*time.Millisecond || lag > 250*time.Millisecond {
		t.Errorf("after 400 ms at rate 0.5 CLOCK_MONOTONIC fell %v behind RAW, want about 200ms", lag)
	}
}

// TestShimWaitsFollowTheDrift runs a program that waits 300 ms of its
// CLOCK_MONOTONIC in each way it can, at rates 0.5 and 2: each wait lasts
// 300 ms as the program's clock measures it and 300/rate ms of real time,
// as on a slow or fast oscillator, with no busy loop. Untranslated, an
// absolute deadline from a slowed clock is reached at once (rate 2's
// CPython time.sleep returns at once) or late, and HotSpot's park spins.
//
// A wait that ends early, or a busy loop, fails at once. A wait that ends
// late can be the machine's (a shared machine stalled the program for a
// second once, in CI): the rate is measured again, up to 3 times, and
// fails only if every try was late.
func TestShimWaitsFollowTheDrift(t *testing.T) {
	bin := compile(t, "waiter", waiterC, "-pthread")
	const wait = 300 * time.Millisecond
	for _, rate := range []float64{0.5, 2} {
		var late []string
		for try := 1; try <= 3; try++ {
			late = waitsAtRate(t, bin, rate, wait)
			if len(late) == 0 {
				break
			}
			t.Logf("rate %g, try %d of 3: late: %s", rate, try, strings.Join(late, "; "))
		}
		for _, l := range late {
			t.Errorf("rate %g: %s", rate, l)
		}
	}
}

// waitsAtRate runs the waiter once at rate: it fails the test on a wait
// that ended early, a missing wait or a busy loop, and returns the waits
// (and the whole run) that ended late.
func waitsAtRate(t *testing.T, bin string, rate float64, wait time.Duration) (late []string) {
	t.Helper()
	c := newControl(t)
	env, err := Env(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	c.SetRate(rate)
	cmd := exec.Command(bin, "300")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.Output()
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("rate %g: %v", rate, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 7 {
		t.Fatalf("rate %g: %d waits reported, want 7:\n%s", rate, len(lines), out)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		d, _ := strconv.ParseInt(f[1], 10, 64)
		switch got := time.Duration(d); {
		case got < wait-2*time.Millisecond:
			t.Errorf("rate %g: %s waited %v of the program's clock, want %v", rate, f[0], got, wait)
		case got > wait+60*time.Millisecond:
			late = append(late, fmt.Sprintf("%s waited %v of the program's clock, want %v", f[0], got, wait))
		}
	}
	want := time.Duration(float64(7*wait) / rate)
	switch {
	case elapsed < want-20*time.Millisecond:
		t.Errorf("rate %g: the 7 waits took %v of real time, want about %v", rate, elapsed, want)
	case elapsed > want+time.Duration(float64(500*time.Millisecond)/rate):
		late = append(late, fmt.Sprintf("the 7 waits took %v of real time, want about %v", elapsed, want))
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()); cpu > 100*time.Millisecond {
		t.Errorf("rate %g: the waits used %v of CPU: a busy loop", rate, cpu)
	}
	return late
}
