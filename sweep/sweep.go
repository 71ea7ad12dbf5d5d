package sweep

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// Options configure a sweep.
type Options struct {
	// Param is the parameter swept; nil sweeps nothing: one point with the
	// scenario's own values.
	Param *Param
	// Points is how many values from Param.From to Param.To (default 5).
	Points int
	// Trials is how many trials each point plays, for each lock (default 10).
	Trials int
	// Locks names the locks to compare ("redis", "redlock+fenced"); empty
	// means the scenario's own lock.
	Locks []string
	// Seed is the sweep's seed; trial t of point p uses
	// runner.TrialSeed(Seed, p, t) for every lock, so locks face the same
	// schedules.
	Seed int64
	// TTL, Duration and Clients override the scenario's (0: keep).
	TTL, Duration time.Duration
	Clients       int
	// Progress, when not nil, is told after each trial.
	Progress *Progress
	// Shard, when set, plays only that slice of the trials (Shard.Plays);
	// the rows then count the shard's trials only, and Merge adds up the
	// shards' rows.
	Shard sharding.Shard
	// Host says where the servers run (runner.Host).
	Host runner.Host
	// Tries is how many times in all a trial that ends unknown is played,
	// with its seed, before it counts as unknown (0:
	// runner.UnknownTries; 1: never again).
	Tries int
	// Unknown, when not nil, is told of each trial that ended without a
	// verdict after its last try, with its lock, point and why (the
	// check's summary).
	Unknown func(lock, point string, trial int, why string)
	// Row, when not nil, is told of each lock's row at a point once that
	// point's trials are played (sim workshop draws the sweep live).
	Row func(Row)
}

// Row is one line of the CSV: one lock at one point.
type Row struct {
	Lock  string
	Param string
	// Value is the point's value: a duration, or a rate for drift.
	Value Value
	// Resolved is the value as used: Value resolved against TTL.
	Resolved time.Duration
	TTL      time.Duration
	// Trials counts the trials played; Unknown, those of them without a
	// verdict (the timing guard found the machine too slow for the
	// trial). Every other count is over the Decided ones.
	Trials, Unknown int
	// Violated counts the trials with any finding (two holders at once,
	// a lost update, a stale write, a fence gone backwards).
	Violated int
	// Damaged counts the trials whose storage accepted a lost update or a
	// stale write.
	Damaged int
	// Violations and CriticalSections sum the findings and the granted
	// acquires over the trials.
	Violations, CriticalSections int
	// Refused sums the writes the fence refused.
	Refused int
	// Injected sums the faults that struck.
	Injected int
	// Each lists the trials behind the counts (trials.csv).
	Each []Trial
}

// outcome is one trial's counts. A trial without a verdict counts as
// unknown and nothing else: a violation on a stalled machine may be the
// stall's, and a clean trial may not have happened as planned.
func outcome(tr *runner.Trial) Row {
	if tr.Check.Verdict == checker.Unknown {
		return Row{Trials: 1, Unknown: 1}
	}
	o := Row{Trials: 1, Violations: tr.Check.Violations, CriticalSections: tr.Check.Mutex.Holds,
		Refused: tr.Check.Fencing.Refused, Injected: tr.Injected}
	if tr.Violated() {
		o.Violated = 1
	}
	if tr.Damaged() {
		o.Damaged = 1
	}
	return o
}

// add adds o's counts to r's (o is a trial's outcome, or a shard's row
// of the same lock and point).
func (r *Row) add(o Row) {
	r.Trials += o.Trials
	r.Unknown += o.Unknown
	r.Violated += o.Violated
	r.Damaged += o.Damaged
	r.Violations += o.Violations
	r.CriticalSections += o.CriticalSections
	r.Refused += o.Refused
	r.Injected += o.Injected
	r.Each = append(r.Each, o.Each...)
}

// Decided counts the trials with a verdict: the rates' denominator.
func (r Row) Decided() int { return r.Trials - r.Unknown }

// NoData says the point has no decided trial: it has no rate, which is
// not a rate of 0.
func (r Row) NoData() bool { return r.Decided() == 0 }

// MaxUnknown is the share of a sweep's trials that may end unknown (the
// timing guard found the machine too slow) before the sweep as a whole is
// not to be trusted: its rates would rest on the trials the machine
// happened to play on time.
const MaxUnknown = 0.10

// Undecided counts the rows' unknown trials and all their trials, and says
// whether more than MaxUnknown of them were unknown.
func Undecided(rows []Row) (unknown, trials int, tooMany bool) {
	for _, r := range rows {
		unknown += r.Unknown
		trials += r.Trials
	}
	return unknown, trials, float64(unknown) > MaxUnknown*float64(trials)
}

// PlayedAgain counts the rows' trials that took more than one try.
func PlayedAgain(rows []Row) int {
	n := 0
	for _, r := range rows {
		for _, t := range r.Each {
			if t.Tries > 1 {
				n++
			}
		}
	}
	return n
}

// Rate is Violated/Decided; DamageRate is Damaged/Decided.
func (r Row) Rate() float64       { return frac(r.Violated, r.Decided()) }
func (r Row) DamageRate() float64 { return frac(r.Damaged, r.Decided()) }

// PerThousand is the findings per 1000 critical sections.
func (r Row) PerThousand() float64 {
	if r.CriticalSections == 0 {
		return 0
	}
	return 1000 * float64(r.Violations) / float64(r.CriticalSections)
}

// X is the value on a plot's x axis: a multiple of the TTL when the
// parameter is a duration other than the TTL itself, else the value
// (milliseconds for durations).
func (r Row) X() float64 {
	switch {
	case isRate(r.Param):
		return r.Value.X
	case r.Param == "ttl":
		return float64(r.Resolved) / float64(time.Millisecond)
	}
	return float64(r.Resolved) / float64(r.TTL)
}

func frac(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// Variant is the scenario for one lock name of --locks, resolved from
// sc (scenarios.Changes.Compare): the base lock ("redis", "redlock",
// "postgres-session", ...) on the nodes scenarios.LockNodes gives it, and
// with "+fenced" a PostgreSQL fencing token and fenced storage; without
// it, no fence (fenced storage becomes plain). A clock fault on a lock
// with no Redis node: the schedule leaves the fault out
// (runner.Schedule), and the lock is measured without it.
func Variant(sc *scenarios.Scenario, name string) (*scenarios.Scenario, error) {
	return variant(sc, scenarios.Changes{Compare: name})
}

// variant resolves sc with c.
func variant(sc *scenarios.Scenario, c scenarios.Changes) (*scenarios.Scenario, error) {
	v, err := scenarios.Resolve(sc, c)
	if err != nil {
		return nil, err
	}
	return v.Scenario, nil
}

// LockName is the --locks name of a scenario's own lock.
func LockName(sc *scenarios.Scenario) string {
	if sc.Fence != "" && sc.Storage == "fenced" {
		return sc.Lock + "+fenced"
	}
	return sc.Lock
}

// point applies value v of parameter key to a generator and TTL: a
// fault's size (Run has checked it is the generator's fault's), the TTL
// or the work time.
func point(key string, v Value, g *scenarios.Generator, ttl *time.Duration) time.Duration {
	d := v.Duration(*ttl)
	switch key {
	case "ttl":
		*ttl = d
	case "work":
		g.Work.Duration = d
	default:
		g.Size = float64(d)
		if isRate(key) {
			g.Size = v.X
		}
	}
	return d
}

// checkKey refuses to sweep the size of a fault the generator does not
// draw.
func checkKey(sc *scenarios.Scenario, key string) error {
	k, _ := LookupKey(key)
	if k.Fault == "" || k.Fault == sc.Generator.Fault {
		return nil
	}
	own := "no fault"
	if gen := sc.Generator.Generated(); gen != nil {
		own = "its fault's size is " + gen.Name
	}
	return input.Errorf("param", key, fmt.Sprintf("%s sizes the %s fault, and %s draws %s (%s)", key, k.Fault, sc.Name, sc.Generator.Fault, own))
}

// Run plays the sweep and returns one row per lock and point, locks in the
// order given, points in order. Each lock gets one environment, reused by
// all its trials.
func Run(ctx context.Context, sc *scenarios.Scenario, o Options) ([]Row, error) {
	if sc.Generator == nil {
		return nil, fmt.Errorf("%s is a scripted story; a sweep needs a generator scenario (sim list 'gen-')", sc.Name)
	}
	o, locks, param := o.resolve(sc)
	if err := checkKey(sc, param.Key); err != nil {
		return nil, err
	}
	var variants []*scenarios.Scenario
	for _, name := range locks {
		v, err := variant(sc, scenarios.Changes{Compare: name, TTL: o.TTL, Duration: o.Duration, Clients: o.Clients})
		if err != nil {
			return nil, err
		}
		variants = append(variants, v)
	}
	values := param.Points(o.Points)
	if o.Progress != nil {
		total := 0
		for li := range locks {
			for pi := range values {
				for ti := 0; ti < o.Trials; ti++ {
					if o.Shard.Plays(li, pi, ti, o.Points, o.Trials) {
						total++
					}
				}
			}
		}
		o.Progress.Start(total)
	}
	var rows []Row
	for li, v := range variants {
		// The environment opens at the lock's first trial: a shard with
		// no trial of a lock starts no server for it.
		var t *runner.Trials
		for pi, val := range values {
			g, ttl := *v.Generator, v.TTL.Duration
			resolved := val.Duration(ttl)
			if o.Param != nil {
				resolved = point(param.Key, val, &g, &ttl)
			}
			if spec := clients.Registered(v.Lock); ttl < spec.MinTTL {
				return nil, input.Errorf("locks", locks[li], fmt.Sprintf("its leases last at least %v, so a TTL of %v would be measured on a %v lease: give a {ttl} of %v or more", spec.MinTTL, ttl, spec.MinTTL, spec.MinTTL))
			}
			row := Row{Lock: locks[li], Param: param.Key, Value: val, Resolved: resolved, TTL: ttl}
			for ti := 0; ti < o.Trials; ti++ {
				if !o.Shard.Plays(li, pi, ti, o.Points, o.Trials) {
					continue
				}
				if t == nil {
					var err error
					if t, err = runner.OpenTrials(ctx, v, runner.Options{Seed: o.Seed, Host: o.Host}); err != nil {
						return nil, fmt.Errorf("%s: %w", locks[li], err)
					}
				}
				tr, tries, err := runner.PlayTries(ctx, o.Tries, func() (*runner.Trial, error) {
					return t.Play(ctx, g, ttl, runner.TrialSeed(o.Seed, pi, ti))
				})
				if err != nil {
					t.Close()
					return nil, fmt.Errorf("%s, %s=%s, trial %d: %w", locks[li], param.Key, val.Format(param.Key), ti+1, err)
				}
				played := outcome(tr)
				played.Each = []Trial{trialOf(tr, ti+1, tries, ttl, played)}
				row.add(played)
				point := param.Key + "=" + val.Format(param.Key)
				if tr.Check.Verdict == checker.Unknown && o.Unknown != nil {
					o.Unknown(locks[li], point, ti+1, tr.Check.Summary)
				}
				if o.Progress != nil {
					o.Progress.Step(locks[li] + " " + point)
				}
			}
			rows = append(rows, row)
			if o.Row != nil {
				o.Row(row)
			}
		}
		if t != nil {
			t.Close()
		}
	}
	if o.Progress != nil {
		o.Progress.Done()
	}
	return rows, nil
}

// resolve fills in o's defaults as Run plays them: 5 points and 10
// trials, the scenario's own lock, and without a parameter one point at
// the scenario's pause.
func (o Options) resolve(sc *scenarios.Scenario) (Options, []string, *Param) {
	if o.Points <= 0 {
		o.Points = 5
	}
	if o.Trials <= 0 {
		o.Trials = 10
	}
	if o.Tries <= 0 {
		o.Tries = runner.UnknownTries
	}
	locks := o.Locks
	if len(locks) == 0 {
		locks = []string{LockName(sc)}
	}
	param := o.Param
	if param == nil {
		key := "ttl"
		if gen := sc.Generator.Generated(); gen != nil {
			key = gen.Name
		}
		param = &Param{Key: key, From: Value{X: sc.Generator.Size}}
		if key == "ttl" {
			param.From.X = float64(sc.TTL.Duration)
		}
		o.Points = 1
	}
	return o, locks, param
}

// Format prints a value as it was written: 0.5ttl, 150ms, 1.5.
func (v Value) Format(key string) string {
	switch {
	case isRate(key):
		return strconv.FormatFloat(v.X, 'g', 4, 64)
	case v.RelTTL:
		return strconv.FormatFloat(v.X, 'g', 4, 64) + "ttl"
	}
	return time.Duration(v.X).Round(time.Microsecond).String()
}

// Header is the CSV's first line.
var Header = []string{"lock", "param", "value", "value_per_ttl", "ttl", "trials", "trials_violated", "rate",
	"rate_low95", "rate_high95", "violations_per_1000_cs", "trials_damaged", "damage_rate",
	"damage_low95", "damage_high95", "fenced_rejections", "critical_sections", "faults_struck", "violations", "trials_unknown"}

// SpreadHeader are the columns WriteCSV adds after Header: each point's
// faults as they struck, in TTLs, over its trials that measured one (the
// unknown ones too): the fewest, the median and the most. They are read
// from trials.csv again, so ReadCSV does not need them.
var SpreadHeader = []string{"struck_min_ttl", "struck_median_ttl", "struck_max_ttl"}

// Spread is the fewest, median and most of the point's trials' faults as
// they struck, in TTLs (NaN when none was measured).
func (r Row) Spread() (lo, median, hi float64) {
	var xs []float64
	for _, t := range r.Each {
		if !math.IsNaN(t.Measured.Struck) {
			xs = append(xs, t.Measured.Struck)
		}
	}
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(xs)
	median = xs[len(xs)/2]
	if len(xs)%2 == 0 {
		median = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return xs[0], median, xs[len(xs)-1]
}

// WriteCSV writes the rows under Header and SpreadHeader. Rates are fractions (0 to 1),
// left empty at a point with no decided trial (no data is not a rate of
// 0); every count is also there as a count (ReadCSV reads them back), so
// that shards' rows can be added up.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(slices.Concat(Header, SpreadHeader)); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, r := range rows {
		lo, hi := Wilson(r.Violated, r.Decided())
		dlo, dhi := Wilson(r.Damaged, r.Decided())
		value, perTTL := r.cells()
		rate, damage := []string{f(r.Rate()), f(lo), f(hi), f(r.PerThousand())}, []string{f(r.DamageRate()), f(dlo), f(dhi)}
		if r.NoData() {
			rate, damage = []string{"", "", "", ""}, []string{"", "", ""}
		}
		rec := []string{r.Lock, r.Param, value, perTTL, r.TTL.String(), strconv.Itoa(r.Trials), strconv.Itoa(r.Violated)}
		rec = append(rec, rate...)
		rec = append(rec, strconv.Itoa(r.Damaged))
		rec = append(rec, damage...)
		rec = append(rec, strconv.Itoa(r.Refused), strconv.Itoa(r.CriticalSections), strconv.Itoa(r.Injected),
			strconv.Itoa(r.Violations), strconv.Itoa(r.Unknown))
		lo, median, hi := r.Spread()
		rec = append(rec, ttlCell(lo), ttlCell(median), ttlCell(hi))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// cells are the row's value and its multiple of the TTL as the CSVs
// write them (no multiple for a rate).
func (r Row) cells() (value, perTTL string) {
	if isRate(r.Param) {
		return strconv.FormatFloat(r.Value.X, 'g', 4, 64), ""
	}
	return time.Duration(r.Resolved).String(), strconv.FormatFloat(float64(r.Resolved)/float64(r.TTL), 'f', 4, 64)
}

// ReadCSV reads the rows WriteCSV wrote: the counts, the lock, the point
// and its TTL. A value relative to the TTL comes back as the duration it
// resolved to (Value.RelTTL is not in the file). Errors name the line.
func ReadCSV(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("line 1: empty file, expected the header %s", strings.Join(Header, ","))
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, h := range Header {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("line 1: no %s column (a sweep.csv of an older sim lacks it: play the sweep again)", h)
		}
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err // csv.ParseError names the line
		}
		line, _ := cr.FieldPos(0)
		row, err := parseRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		rows = append(rows, row)
	}
}

// parseRow reads one record of the CSV, its columns found through col.
func parseRow(rec []string, col map[string]int) (Row, error) {
	r := Row{Lock: rec[col["lock"]], Param: rec[col["param"]]}
	if r.Lock == "" {
		return Row{}, errors.New("lock: empty")
	}
	if _, ok := LookupKey(r.Param); !ok {
		return Row{}, fmt.Errorf("param: unknown key %q", r.Param)
	}
	var err error
	if r.TTL, err = time.ParseDuration(rec[col["ttl"]]); err != nil || r.TTL <= 0 {
		return Row{}, fmt.Errorf("ttl: expected a duration, got %q", rec[col["ttl"]])
	}
	value := rec[col["value"]]
	if isRate(r.Param) {
		if r.Value.X, err = strconv.ParseFloat(value, 64); err != nil {
			return Row{}, fmt.Errorf("value: expected a rate, got %q", value)
		}
		r.Resolved = r.Value.Duration(r.TTL)
	} else {
		if r.Resolved, err = time.ParseDuration(value); err != nil {
			return Row{}, fmt.Errorf("value: expected a duration, got %q", value)
		}
		r.Value = Value{X: float64(r.Resolved)}
	}
	for _, c := range []struct {
		name string
		n    *int
	}{
		{"trials", &r.Trials}, {"trials_unknown", &r.Unknown}, {"trials_violated", &r.Violated}, {"trials_damaged", &r.Damaged},
		{"violations", &r.Violations}, {"critical_sections", &r.CriticalSections},
		{"fenced_rejections", &r.Refused}, {"faults_struck", &r.Injected},
	} {
		s := rec[col[c.name]]
		if *c.n, err = strconv.Atoi(s); err != nil || *c.n < 0 {
			return Row{}, fmt.Errorf("%s: expected a count, got %q", c.name, s)
		}
	}
	if r.Unknown > r.Trials || r.Violated > r.Decided() || r.Damaged > r.Decided() {
		return Row{}, fmt.Errorf("%d trials (%d unknown), %d violated, %d damaged: more than played", r.Trials, r.Unknown, r.Violated, r.Damaged)
	}
	return r, nil
}
