package clockshim

import (
	"encoding/binary"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
