// Package clockshim shifts the clocks that a child process (redis-server,
// a client program) sees, while it runs, without touching the machine's
// clock.
//
// libfaketime deadlocks in Debian's jemalloc-linked redis-server, so the
// package embeds a small LD_PRELOAD library (clockshim.c) that overrides
// clock_gettime, gettimeofday and time, and translates the process's timed
// waits (sleeps, poll and epoll timeouts, timed condition and semaphore
// waits) so that they last as long as the shifted clocks say. The library
// reads a control file that a Control maps read-write in the harness; a
// write to the Control is seen by the child at its next clock read.
//
// The wall clock takes a step (Jump, SetOffset) and a rate (SetRate). The
// monotonic clocks (CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE,
// CLOCK_BOOTTIME) take the same rate and never a step, as a slow or fast
// oscillator or NTP's slew moves them: they stay continuous when the rate
// changes and never run backwards. CLOCK_MONOTONIC_RAW is never shifted.
//
// Workers are static Go binaries that LD_PRELOAD does not reach; they use
// Control.Now and Control.Monotonic for client-side clock faults, which
// compute exactly what the shim would report.
package clockshim

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:embed clockshim.c
var source []byte

// Environment variables the shim and this package read.
const (
	// EnvFile names the control file the shim maps (read by the shim).
	EnvFile = "LOCKSIM_CLOCK_FILE"
	// EnvLibrary overrides the path of the compiled shim (read by Library).
	EnvLibrary = "LOCKSIM_CLOCKSHIM"
)

// FileSize is the size of a control file in bytes: ten int64s (see
// clockshim.c for the layout).
const FileSize = 80

// Layout is the version of the control file's layout, written in its
// fifth word: 2 added the monotonic clocks' words (1, 32 bytes, had the
// wall clock's only; a shim reading a version-1 file shifts the wall
// clock alone).
const Layout = 2

const ppb = 1_000_000_000

var (
	libMu   sync.Mutex
	libPath string
)

// Library returns the path of the compiled shim. It compiles the embedded
// source with `cc -shared -fPIC -O2` once per source version into the user
// cache dir (…/locksim/clockshim-<sha256 prefix>.so); concurrent processes
// are safe (write to a temp name, then rename). LOCKSIM_CLOCKSHIM, when set,
// names a prebuilt library to use instead.
func Library() (string, error) {
	if p := os.Getenv(EnvLibrary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("clock shim: %s=%s: %w", EnvLibrary, p, err)
		}
		return p, nil
	}
	libMu.Lock()
	defer libMu.Unlock()
	if libPath != "" {
		return libPath, nil
	}
	sum := sha256.Sum256(source)
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "locksim")
	path := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		libPath = path
		return path, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			return "", errors.New("the clock shim needs a C compiler (apt-get install gcc)")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	src, err := os.CreateTemp(dir, "clockshim-*.c")
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	defer os.Remove(src.Name())
	if _, err := src.Write(source); err != nil {
		src.Close()
		return "", fmt.Errorf("clock shim: %w", err)
	}
	if err := src.Close(); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	tmp := src.Name() + ".so"
	defer os.Remove(tmp)
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", tmp, src.Name()).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("clock shim: %s failed: %v\n%s", cc, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	libPath = path
	return path, nil
}

// Env returns the environment entries that run a child under the shim with
// the control file at path. It compiles the shim if needed.
func Env(path string) ([]string, error) {
	lib, err := Library()
	if err != nil {
		return nil, err
	}
	return []string{"LD_PRELOAD=" + lib, EnvFile + "=" + path}, nil
}

// Control is the writer (and a reader) of one control file. Its methods are
// safe for concurrent use; only one Control should write a given file.
type Control struct {
	path string
	mu   sync.Mutex // serialises writers
	mem  []byte
	w    *[10]int64 // see clockshim.c
	// segs are the monotonic rates this Control set, oldest first, so
	// that a past shifted reading maps back to the real clock exactly.
	segs []segment
}

// segment is one stretch of the monotonic clocks at one rate: from the
// real reading base (shifted: vbase) on, at rate ppb; prev is the rate
// before it.
type segment struct{ base, vbase, rate, prev int64 }

// NewControl creates (or opens) the control file at path, sizes it to
// FileSize bytes, maps it read-write and resets it (no offset, normal rate).
// A child already mapping the file sees the reset.
func NewControl(path string) (*Control, error) { return open(path, true) }

// OpenControl maps an existing control file without resetting it, for a
// reader in another process (a worker computing Now).
func OpenControl(path string) (*Control, error) { return open(path, false) }

func open(path string, create bool) (*Control, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clock control: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("clock control: %w", err)
	}
	if fi.Size() < FileSize {
		if !create {
			return nil, fmt.Errorf("clock control: %s is %d bytes, want %d", path, fi.Size(), FileSize)
		}
		if err := f.Truncate(FileSize); err != nil {
			return nil, fmt.Errorf("clock control: %w", err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, FileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock control: mmap %s: %w", path, err)
	}
	c := &Control{path: path, mem: mem, w: (*[10]int64)(unsafe.Pointer(&mem[0]))}
	if create {
		c.Reset()
	} else if v := atomic.LoadInt64(&c.w[4]); v != Layout {
		unix.Munmap(mem)
		return nil, fmt.Errorf("clock control: %s has layout %d, want %d", path, v, Layout)
	}
	return c, nil
}

// Path is the control file's path (the value of LOCKSIM_CLOCK_FILE).
func (c *Control) Path() string { return c.path }

// state is one consistent reading of the control file: the wall clock's
// offset, base and rate, and the monotonic clocks' rate, base (a real
// CLOCK_MONOTONIC reading), shifted reading at the base, rate before the
// base, and CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC.
type state struct{ offset, base, rate, mrate, mbase, mvbase, mprev, boot int64 }

// words are the state's places in the file.
var words = [...]int{1, 2, 3, 5, 6, 7, 8, 9}

func (st *state) fields() [8]*int64 {
	return [8]*int64{&st.offset, &st.base, &st.rate, &st.mrate, &st.mbase, &st.mvbase, &st.mprev, &st.boot}
}

func (c *Control) load() state {
	for {
		s1 := atomic.LoadInt64(&c.w[0])
		if s1&1 != 0 {
			continue
		}
		var st state
		for i, f := range st.fields() {
			*f = atomic.LoadInt64(&c.w[words[i]])
		}
		if atomic.LoadInt64(&c.w[0]) == s1 {
			return st
		}
	}
}

// store writes a new state under the seqlock; the caller holds c.mu.
func (c *Control) store(st state) { c.update(func(s *state) { *s = st }) }

// update changes the state under the seqlock; the caller holds c.mu. It
// calls change inside the write section, so that a clock read there is
// ordered against every reader's.
func (c *Control) update(change func(*state)) {
	st := c.load()
	seq := atomic.LoadInt64(&c.w[0])
	if seq&1 != 0 { // a writer died mid-update; close its section
		seq++
	}
	atomic.StoreInt64(&c.w[0], seq+1)
	change(&st)
	atomic.StoreInt64(&c.w[4], Layout)
	for i, f := range st.fields() {
		atomic.StoreInt64(&c.w[words[i]], *f)
	}
	atomic.StoreInt64(&c.w[0], seq+2)
}

// shifted is the shim's formula, with the same truncation toward zero and
// the same clamping: real + offset + (real-base)*(rate-1e9)/1e9.
func (st state) shifted(real int64) int64 {
	t := real
	add := func(d int64) {
		s, ok := addOK(t, d)
		if !ok {
			if d > 0 {
				s = math.MaxInt64
			} else {
				s = math.MinInt64
			}
		}
		t = s
	}
	add(st.offset)
	if st.rate != 0 && st.rate != ppb {
		add(mulDiv(real-st.base, st.rate-ppb))
	}
	if t < 0 {
		t = 0
	}
	return t
}

// mono is the shim's shifted CLOCK_MONOTONIC for a real reading:
// mvbase + (real-mbase)*mrate/1e9, at the rate before mbase for a reading
// behind it.
func (st state) mono(real int64) int64 {
	r := st.mrate
	if real < st.mbase {
		r = st.mprev
	}
	if r == 0 {
		r = ppb
	}
	t, ok := addOK(st.mvbase, mulDiv(real-st.mbase, r))
	if !ok || t < 0 {
		t = 0
	}
	return t
}

// drift is (real-base)*(rate-1e9)/1e9, the rate term alone.
func (st state) drift(real int64) int64 {
	if st.rate == 0 || st.rate == ppb {
		return 0
	}
	return mulDiv(real-st.base, st.rate-ppb)
}

// mulDiv is a*b/1e9 computed in 128 bits, truncated toward zero and
// saturated to int64.
func mulDiv(a, b int64) int64 {
	neg := (a < 0) != (b < 0)
	hi, lo := bits.Mul64(abs(a), abs(b))
	if hi >= ppb { // the quotient does not fit in 64 bits
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, ppb)
	if neg {
		if q > 1<<63 {
			return math.MinInt64
		}
		return -int64(q)
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func abs(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // MinInt64 wraps to 1<<63, which is right
	}
	return uint64(x)
}

func addOK(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0) || b == 0
}

// realNow, realMono and realBoot read the real clocks; tests replace them.
var (
	realNow  = func() int64 { return time.Now().UnixNano() }
	realMono = func() int64 { return clock(unix.CLOCK_MONOTONIC) }
	realBoot = func() int64 { return clock(unix.CLOCK_BOOTTIME) }
)

func clock(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(%d): %v", id, err))
	}
	return ts.Nano()
}

// Monotonic is the shifted CLOCK_MONOTONIC reading (ns) the shim reports
// to a child right now: the real one while no rate was ever set.
func (c *Control) Monotonic() int64 { return c.load().mono(realMono()) }

// RealMonotonic is the real CLOCK_MONOTONIC instant at which the shifted
// one reads (or will read, at the rate now in force) m: the inverse of
// Monotonic, by which the harness puts a drifting client's instants on
// the machine's clock. A past m maps back through every rate this Control
// set; a Control that did not set the rate now in force (one opened with
// OpenControl) knows only that rate and the one before it.
func (c *Control) RealMonotonic(m int64) int64 {
	st := c.load()
	segs := []segment{{st.mbase, st.mvbase, st.mrate, st.mprev}}
	c.mu.Lock()
	if n := len(c.segs); n > 0 && c.segs[n-1] == segs[0] {
		segs = c.segs
	}
	c.mu.Unlock()
	i := len(segs) - 1
	for i > 0 && m < segs[i].vbase {
		i--
	}
	g := segs[i]
	r := g.rate
	if m < g.vbase {
		r = g.prev
	}
	if r == 0 {
		r = ppb
	}
	// base + (m - vbase) * 1e9 / r, saturated
	left := m - g.vbase
	hi, lo := bits.Mul64(abs(left), ppb)
	q := uint64(math.MaxInt64)
	if hi < uint64(r) {
		q, _ = bits.Div64(hi, lo, uint64(r))
	}
	d := int64(min(q, math.MaxInt64))
	if left < 0 {
		d = -d
	}
	t, ok := addOK(g.base, d)
	if !ok {
		return math.MaxInt64
	}
	return t
}

// Now is the shifted wall-clock time the shim reports to a child right now.
func (c *Control) Now() time.Time { return time.Unix(0, c.load().shifted(realNow())) }

// At is the shifted time the shim reports when the real clock reads real.
func (c *Control) At(real time.Time) time.Time {
	return time.Unix(0, c.load().shifted(real.UnixNano()))
}

// Skew is how far the shifted clock is from the real clock right now:
// the offset plus the drift the rate has accumulated since it was set.
func (c *Control) Skew() time.Duration {
	r := realNow()
	return time.Duration(c.load().shifted(r) - r)
}

// SetOffset sets the offset (the rate's drift, if any, comes on top).
func (c *Control) SetOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.load()
	st.offset = int64(d)
	c.store(st)
}

// Offset is the offset last set (without the rate's drift; see Skew).
func (c *Control) Offset() time.Duration { return time.Duration(c.load().offset) }

// Jump moves the shifted clock by d at once (adds d to the offset).
func (c *Control) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.load()
	st.offset += int64(d)
	c.store(st)
}

// SetRate makes the shifted clocks, wall and monotonic, run at rate times
// real speed from now on (1.5: 1.5 s per real second), without a jump:
// the wall clock's drift so far is folded into its offset and its base
// becomes now; the monotonic clocks go on from where they stand. A rate
// <= 0 stops the clocks (stored as 1e-9, since 0 means normal speed in
// the file).
func (c *Control) SetRate(rate float64) {
	if math.IsNaN(rate) {
		panic("clockshim: SetRate(NaN)")
	}
	r := int64(1)
	switch {
	case rate >= float64(math.MaxInt64)/ppb:
		r = math.MaxInt64
	case rate > 0:
		r = max(int64(math.Round(rate*ppb)), 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.update(func(st *state) {
		now := realNow()
		st.offset += st.drift(now)
		st.base = now
		st.rate = r
		st.setMono(r)
		c.segs = append(c.segs, segment{st.mbase, st.mvbase, st.mrate, st.mprev})
	})
}

// setMono starts the monotonic clocks' rate r (ppb) now, where they stand.
func (st *state) setMono(r int64) {
	m := realMono()
	st.mvbase = st.mono(m)
	st.mprev = st.mrate
	st.mbase = m
	st.mrate = r
	st.boot = realBoot() - m
}

// Rate is the rate last set (1 for normal speed).
func (c *Control) Rate() float64 {
	r := c.load().rate
	if r == 0 {
		return 1
	}
	return float64(r) / ppb
}

// Reset restores the real wall clock (offset 0, rate 1) and the monotonic
// clocks' real speed; they go on from where they stand, never backwards,
// so a monotonic clock a drift slowed stays behind the real one.
func (c *Control) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.update(func(st *state) {
		st.offset, st.base, st.rate = 0, 0, 0
		st.setMono(ppb)
		c.segs = append(c.segs, segment{st.mbase, st.mvbase, st.mrate, st.mprev})
	})
}

// Close unmaps the file (the file stays; children keep their own
// mappings). The Control must not be used after Close.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem)
	c.mem, c.w = nil, nil
	return err
}
