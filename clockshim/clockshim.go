// Package clockshim shifts the wall clock that a child process (redis-server)
// sees, while it runs, without touching the machine's clock.
//
// libfaketime deadlocks in Debian's jemalloc-linked redis-server, so the
// package embeds a small LD_PRELOAD library (clockshim.c) that overrides
// clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE only),
// gettimeofday and time. The library reads a 32-byte control file that a
// Control maps read-write in the harness; a write to the Control is seen by
// the child at its next clock read. CLOCK_MONOTONIC is never shifted.
//
// Workers are static Go binaries that LD_PRELOAD does not reach; they use
// Control.Now for client-side clock faults, which computes exactly what the
// shim would report.
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

// FileSize is the size of a control file in bytes.
const FileSize = 32

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
	w    *[4]int64 // seq, offset_ns, base_ns, rate_ppb
}

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
	c := &Control{path: path, mem: mem, w: (*[4]int64)(unsafe.Pointer(&mem[0]))}
	if create {
		c.Reset()
	}
	return c, nil
}

// Path is the control file's path (the value of LOCKSIM_CLOCK_FILE).
func (c *Control) Path() string { return c.path }

// state is one consistent reading of the control file.
type state struct{ offset, base, rate int64 }

func (c *Control) load() state {
	for {
		s1 := atomic.LoadInt64(&c.w[0])
		if s1&1 != 0 {
			continue
		}
		st := state{atomic.LoadInt64(&c.w[1]), atomic.LoadInt64(&c.w[2]), atomic.LoadInt64(&c.w[3])}
		if atomic.LoadInt64(&c.w[0]) == s1 {
			return st
		}
	}
}

// store writes a new state under the seqlock; the caller holds c.mu.
func (c *Control) store(st state) {
	seq := atomic.LoadInt64(&c.w[0])
	if seq&1 != 0 { // a writer died mid-update; close its section
		seq++
	}
	atomic.StoreInt64(&c.w[0], seq+1)
	atomic.StoreInt64(&c.w[1], st.offset)
	atomic.StoreInt64(&c.w[2], st.base)
	atomic.StoreInt64(&c.w[3], st.rate)
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

// realNow reads the real clock; tests replace it.
var realNow = func() int64 { return time.Now().UnixNano() }

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

// SetRate makes the shifted clock run at rate times real speed from now
// on (1.5: 1.5 s per real second), without a jump: the drift so far is
// folded into the offset and the base becomes now. A rate <= 0 stops the
// clock (stored as 1e-9, since 0 means normal speed in the file).
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
	st := c.load()
	now := realNow()
	st.offset += st.drift(now)
	st.base = now
	st.rate = r
	c.store(st)
}

// Rate is the rate last set (1 for normal speed).
func (c *Control) Rate() float64 {
	r := c.load().rate
	if r == 0 {
		return 1
	}
	return float64(r) / ppb
}

// Reset restores the real clock: offset 0, rate 1.
func (c *Control) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(state{})
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
