package cost

// run.go: one sim cost run: the floors, then each option on servers of
// its own, started, measured and stopped in turn.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/storage"
)

// Options say what a run measures and how long.
type Options struct {
	// Locks are the locks measured, each with its options (OptionsOf).
	Locks []string
	// Duration is each point's length, after its warm-up.
	Duration time.Duration
	// Contenders is how many clients contend for the lock (4).
	Contenders int
	// Dir holds the servers' files.
	Dir string
	// Progress, when set, is told each point done: how many of how many,
	// and what it was.
	Progress func(done, total int, what string)
}

// Row is one option's figures.
type Row struct {
	Option
	// Servers says what it ran on ("5 Redis 7.0.15 node(s)").
	Servers string `json:"servers"`
	// Floor names the floor it is a multiple of.
	Floor string `json:"floor"`
	// AcquireRelease is one uncontended acquire and release.
	AcquireRelease Latency `json:"acquire_release"`
	// FloorLatency is the floor's request timed turn about with
	// AcquireRelease, on this option's own servers: what the ratios
	// divide by, so that a busy moment of the machine weighs on both
	// alike (absent from runs before 2026-12-04: their ratios are over
	// the run's Floors).
	FloorLatency Latency `json:"floor_latency"`
	// RatioP50 and RatioP99 are AcquireRelease over FloorLatency.
	RatioP50 float64 `json:"ratio_p50"`
	RatioP99 float64 `json:"ratio_p99"`
	// OneLock and FourLocks are the locks per second of Contenders
	// clients contending for one lock, and each for its own.
	OneLock   Rate `json:"contended_one_lock"`
	FourLocks Rate `json:"contended_four_locks"`
	// Defences are, by name, a critical section with each defence (none
	// is the plain read-modify-write, the others' baseline); the
	// watchdog's is one renewal. A defence the lock has no use for is
	// absent (a lock without a TTL has no watchdog).
	Defences map[string]Latency `json:"defences"`
	// Err says why the row is not complete ("": it is).
	Err string `json:"error,omitempty"`
}

// Extra is what defence d adds to a plain critical section, at the
// median (0 for none, or one not measured). For the watchdog it is one
// renewal, paid every TTL/3 while a lock is held, not once a section.
func (r Row) Extra(d string) time.Duration {
	l, ok := r.Defences[d]
	if !ok || d == DefenceNone {
		return 0
	}
	if d == DefenceWatchdog {
		return l.P50
	}
	return l.P50 - r.Defences[DefenceNone].P50
}

// Result is a whole run.
type Result struct {
	// Command is how it was asked for; Version the sim that ran it.
	Command string `json:"command,omitempty"`
	Version string `json:"version,omitempty"`
	// Started is when; Took how long, servers included.
	Started time.Time `json:"started"`
	Took    float64   `json:"took_s"`
	// Cores is the machine's; Duration each point's.
	Cores int `json:"cores"`
	// Load is the 1-minute load average when it began, before its own
	// servers (0: not recorded): above Cores, the machine was busy with
	// other work and the figures are not an idle machine's. (While it
	// runs, its own servers and contending clients keep every core busy
	// by design.)
	Load       float64 `json:"load,omitempty"`
	DurationS  float64 `json:"duration_s"`
	Contenders int     `json:"contenders"`
	Floors     []Floor `json:"floors"`
	Rows       []Row   `json:"rows"`
	// Verdicts names where the chart's verdicts come from; Marks are
	// they (Marks).
	Verdicts string `json:"verdicts,omitempty"`
	Marks    []Mark `json:"marks,omitempty"`
}

// Floor is the floor named name ("": none measured).
func (r *Result) Floor(name string) (Floor, bool) {
	for _, f := range r.Floors {
		if f.Name == name {
			return f, true
		}
	}
	return Floor{}, false
}

// Failed is the first incomplete row's option and why, nil when every
// row is complete.
func (r *Result) Failed() error {
	var errs []error
	for _, row := range r.Rows {
		if row.Err != "" {
			errs = append(errs, fmt.Errorf("%s: %s", row.Key, row.Err))
		}
	}
	return errors.Join(errs...)
}

// Points is how many points a run of opts measures, for a progress bar.
func Points(opts []Option) int {
	n := 2 // the Redis and PostgreSQL floors
	seen := map[string]bool{}
	for _, o := range opts {
		spec := clients.Registered(o.Lock)
		if f := floorOf(spec.Backend); f != FloorRedis && f != FloorPostgres && f != "" && !seen[f] {
			seen[f] = true
			n++
		}
		n += 3 + len(sectionDefences)
		if hasWatchdog(spec) {
			n++
		}
	}
	return n
}

// sectionDefences are the defences timed as critical sections,
// interleaved in one loop.
var sectionDefences = []string{DefenceNone, DefenceFenced, DefenceTokenCAS, DefenceLeaseCheck}

// hasWatchdog says whether a lock's leases can be renewed: they expire
// by a TTL and Extend sends something.
func hasWatchdog(spec clients.Spec) bool { return !spec.NoExpiry && !spec.LocalExtend }

// Run measures o's locks. It returns what it measured, with the error
// that stopped it (the context's when interrupted); a point that failed
// leaves its row's Err, and the run goes on.
func Run(ctx context.Context, o Options) (*Result, error) {
	opts, err := OptionsOf(o.Locks)
	if err != nil {
		return nil, err
	}
	if o.Contenders <= 0 {
		o.Contenders = 4
	}
	if o.Dir == "" {
		if o.Dir, err = env.TempDir("locksim-cost-"); err != nil {
			return nil, err
		}
		defer env.RemoveTempDir(o.Dir)
	}
	r := &Result{Started: time.Now(), Cores: runtime.NumCPU(), DurationS: o.Duration.Seconds(), Contenders: o.Contenders}
	defer func() { r.Took = time.Since(r.Started).Seconds() }()
	m := &meter{o: o, total: Points(opts), net: env.NewNetwork()}
	defer m.net.Close()

	// The base servers: a Redis node and a PostgreSQL cluster for the
	// floors, and the protected storage of every lock but PostgreSQL's.
	base, err := m.start(ctx, clients.RedisBackend, 1, nil)
	if err != nil {
		return r, err
	}
	defer base.Close()
	basePG, err := m.start(ctx, clients.PostgresBackend, 0, backends.PostgresSettings{})
	if err != nil {
		return r, err
	}
	defer basePG.Close()
	var cfg clients.Config
	if err := base.Connect(&cfg, direct); err != nil {
		return r, err
	}
	pg := backends.PostgresOf(basePG)
	m.storageDSN = pg.DSN(pg.Addr())
	if err := storage.Setup(ctx, m.storageDSN); err != nil {
		return r, err
	}
	for _, f := range []struct{ name, addr, dsn string }{
		{FloorRedis, cfg.Servers[clients.RedisBackend][0].Addr, ""},
		{FloorPostgres, "", m.storageDSN},
	} {
		fl, err := measureFloor(ctx, o.Duration, f.name, f.addr, f.dsn)
		if err != nil {
			return r, err
		}
		r.Floors = append(r.Floors, fl)
		m.step(f.name)
	}
	for _, opt := range opts {
		row := m.measure(ctx, r, opt)
		r.Rows = append(r.Rows, row)
		if err := ctx.Err(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// meter is a run under way.
type meter struct {
	o          Options
	net        *env.Network
	done       int
	total      int
	storageDSN string
}

// step counts one point done.
func (m *meter) step(what string) {
	m.done++
	if m.o.Progress != nil {
		m.o.Progress(m.done, m.total, what)
	}
}

// direct is the link of a client that dials each server itself: no
// proxy between them, so that the figures are the servers' and the
// lock's, not toxiproxy's.
func direct(_, addr string) (string, error) { return addr, nil }

// start starts nodes servers of backend b with settings (nil: its
// defaults).
func (m *meter) start(ctx context.Context, b clients.Backend, nodes int, settings backends.Settings) (backends.Servers, error) {
	be, ok := backends.Lookup(b)
	if !ok {
		return nil, fmt.Errorf("backend %q is not registered", b)
	}
	if settings == nil {
		settings = be.Settings()
	}
	// Each set of servers its own directory: node A of one set and of
	// the next run side by side.
	dir, err := os.MkdirTemp(m.o.Dir, string(b)+"-")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return be.Start(sctx, backends.Options{Nodes: nodes, Clients: m.o.Contenders + 1, Settings: settings, Dir: dir, Network: m.net})
}

// measure starts opt's servers, measures its row and stops them.
func (m *meter) measure(ctx context.Context, r *Result, opt Option) (row Row) {
	spec := clients.Registered(opt.Lock)
	row = Row{Option: opt, Floor: floorOf(spec.Backend), Defences: map[string]Latency{}}
	points := 3 + len(sectionDefences)
	if hasWatchdog(spec) {
		points++
	}
	defer func() {
		// A row cut short still counts its points, so the bar ends full.
		for m.done < m.total && points > 0 && row.Err != "" {
			m.step(opt.Key + ": not measured")
			points--
		}
	}()
	fail := func(err error) Row {
		row.Err = err.Error()
		return row
	}
	srv, err := m.start(ctx, spec.Backend, backends.DefaultNodes(spec), opt.Settings)
	if err != nil {
		return fail(fmt.Errorf("starting its servers: %v", err))
	}
	defer srv.Close()
	row.Servers = srv.Describe()
	var cfg clients.Config
	if err := srv.Connect(&cfg, direct); err != nil {
		return fail(err)
	}
	storageDSN := m.storageDSN
	if pg := backends.PostgresOf(srv); pg != nil {
		// A PostgreSQL lock's storage is in its own database, where an
		// xact lock's transaction writes it.
		storageDSN = pg.DSN(pg.Addr())
		if err := storage.Setup(ctx, storageDSN); err != nil {
			return fail(err)
		}
	}
	// The floor's request goes to the server the lock reaches first (a
	// PostgreSQL lock's floor to the cluster itself, past any pooler).
	floorAddr, floorDSN := "", storageDSN
	on := spec.Backend
	if row.Floor == FloorRedis {
		on = clients.RedisBackend // a Sentinel lock's Redis nodes, not its sentinels
	}
	if nodes := cfg.Servers[on]; len(nodes) > 0 {
		floorAddr = nodes[0].Addr
	}
	if row.Floor != "" && floorAddr == "" && spec.Backend != clients.PostgresBackend {
		return fail(fmt.Errorf("no server to measure %s on", row.Floor))
	}
	if _, ok := r.Floor(row.Floor); !ok && row.Floor != "" {
		fl, err := measureFloor(ctx, m.o.Duration, row.Floor, floorAddr, floorDSN)
		if err != nil {
			return fail(err)
		}
		r.Floors = append(r.Floors, fl)
		m.step(row.Floor)
	}
	newLocks := func(n int) ([]clients.Lock, func(), error) {
		var locks []clients.Lock
		closeAll := func() {
			for _, l := range locks {
				l.Close()
			}
		}
		for i := 0; i < n; i++ {
			c := cfg
			c.ClientID = i + 1
			lk, err := spec.New(c)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			locks = append(locks, lk)
			if w, ok := lk.(clients.Warmer); ok {
				if err := w.Warm(ctx); err != nil {
					closeAll()
					return nil, nil, err
				}
			}
		}
		return locks, closeAll, nil
	}

	// One client, uncontended.
	locks, closeLocks, err := newLocks(1)
	if err != nil {
		return fail(err)
	}
	defer func() { closeLocks() }()
	lk := locks[0]
	// Acquire and release, turn about with the floor's request.
	ops := []func() error{func() error { return acquireRelease(ctx, lk, "cost-uncontended") }}
	if row.Floor != "" {
		fop, _, closeFloor, err := floorOp(ctx, row.Floor, floorAddr, floorDSN)
		if err != nil {
			return fail(err)
		}
		defer closeFloor()
		ops = append(ops, fop)
	}
	lats, err := timeOps(ctx, m.o.Duration, ops...)
	if err != nil {
		return fail(fmt.Errorf("acquire and release: %v", err))
	}
	row.AcquireRelease = lats[0]
	if len(lats) > 1 {
		row.FloorLatency = lats[1]
		if f := row.FloorLatency; f.P50 > 0 && f.P99 > 0 {
			row.RatioP50 = float64(row.AcquireRelease.P50) / float64(f.P50)
			row.RatioP99 = float64(row.AcquireRelease.P99) / float64(f.P99)
		}
	}
	points--
	m.step(opt.Key + ": acquire and release")

	// The defences, one client, interleaved.
	sec := &section{lock: lk, key: "cost-section", stores: map[storage.Mode]*storage.Store{}}
	if err := storage.Reset(ctx, storageDSN); err != nil {
		return fail(err)
	}
	for _, mode := range []storage.Mode{storage.Plain, storage.Fenced, storage.TokenCAS} {
		st, err := storage.Open(ctx, storageDSN, mode)
		if err != nil {
			return fail(err)
		}
		defer st.Close()
		sec.stores[mode] = st
	}
	if !spec.Fences {
		seq, err := clients.NewPGSequence(storageDSN)
		if err != nil {
			return fail(err)
		}
		defer seq.Close()
		sec.fence = seq
	}
	var cycles []func() error
	for _, d := range sectionDefences {
		cycles = append(cycles, func() error { return sec.cycle(ctx, d) })
	}
	lats, err = timeOps(ctx, m.o.Duration, cycles...)
	if err != nil {
		return fail(fmt.Errorf("critical sections: %v", err))
	}
	for i, d := range sectionDefences {
		row.Defences[d] = lats[i]
		points--
		m.step(opt.Key + ": " + d)
	}
	if hasWatchdog(spec) {
		if row.Defences[DefenceWatchdog], err = renewals(ctx, m.o.Duration, lk, "cost-watchdog"); err != nil {
			return fail(fmt.Errorf("watchdog renewals: %v", err))
		}
		points--
		m.step(opt.Key + ": watchdog renewal")
	}
	closeLocks()
	closeLocks = func() {}

	// Contenders, for one lock and for one each.
	cl, closeCl, err := newLocks(m.o.Contenders)
	if err != nil {
		return fail(err)
	}
	defer closeCl()
	backoff := row.AcquireRelease.P50
	if row.OneLock, err = contend(ctx, m.o.Duration, cl, func(int) string { return "cost-one" }, backoff); err != nil {
		return fail(fmt.Errorf("%d clients, one lock: %v", m.o.Contenders, err))
	}
	points--
	m.step(opt.Key + ": one lock contended")
	if row.FourLocks, err = contend(ctx, m.o.Duration, cl, func(i int) string { return fmt.Sprintf("cost-own-%d", i+1) }, backoff); err != nil {
		return fail(fmt.Errorf("%d clients, a lock each: %v", m.o.Contenders, err))
	}
	points--
	m.step(opt.Key + ": a lock each")
	return row
}
