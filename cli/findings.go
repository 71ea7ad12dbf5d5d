// findings.go: `sim findings`, what the stories and a hunt show about
// every lock: each registered lock and each client program's lock under
// examples/, written to docs/findings.md (package findings).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

type findingsOptions struct {
	only       []string
	doc        string
	out        string
	examples   string
	huntBudget time.Duration
	huntRuns   int
	seed       int64
	shard      string
	shards     int
	// balance is the page (a findings .json) whose rows' times deal the
	// locks to the shards ("": every Nth).
	balance string
	// jobs is how many shards of the run play at once on this machine.
	jobs int
	// report and repeat are --report's: the subject, and how many times
	// each of its findings is played again.
	report string
	repeat int
	flags  *pflag.FlagSet
}

func findingsCmd() *cobra.Command {
	var o findingsOptions
	cmd := &cobra.Command{
		Use:   "findings [--only NAME,...] [--doc FILE] [--out DIR]",
		Short: "play every lock, and every client program's, against the stories of its servers and a hunt; write docs/findings.md",
		Long: `For every registered lock (sim locks) and every lock of every client
program under examples/ (a folder holding client.js, client.py or an
executable client): play each scripted story of its servers, as sim
matrix does, judged against the lock it stands in for where it replaces
the story's own; then hunt it (sim hunt told nothing but its name; a
program's hunt has the lock it stands in for as --baseline, so that what
it finds is what the program does worse). Write FILE (default
docs/findings.md), FILE's .html and .json beside it: the library
versions, each cell with the command that plays it again, what each hunt
found (its shrunk story) and what that means for the lock's users.

--only refreshes the named locks (a lock, a program's folder, or a
subject's name as the page gives it) and keeps the others from FILE's
.json, for when one library releases a new version. The runs go to DIR
(default runs/findings-<time>). A progress bar on stderr counts the
stories and hunts done. --examples '' plays no client program (the
locksim image has no Node.js or Python).

To spread it over N machines, run it on each with the same flags and
--shard I/N (or auto, as sim sweep reads it) and a --doc of its own: each
plays every Nth lock (with --balance PAGE.json, the locks dealt out by
their rows' times on that page, longest first) and writes only those.
Then sim findings merge joins the shards' FILE.json into --doc. --jobs
N does that on this machine: N shard processes at once, each into
DIR/shard-I (its log there), the locks dealt out by the times on
--doc's .json, then merged into --doc. A story's run is mostly
waiting, so two at once take little more than one; each row records
the load it played at, and a row played busier than the cores is not
written over an idle one. Keep N at the cores: on 2 cores three at once
took 37 minutes, but 24 of the 40 rows played above load 2.

--report NAME writes docs/findings/NAME.md (beside --doc; a client
program gets a page for each of its servers: node-redlock-redis.md and
node-redlock-redlock.md) instead: for
each finding the page lists about NAME, and its hunt's shrunk story, the
story played --repeat times with NAME, each run judged against its
reference, then once with its counterfactual. Each becomes an issue its
maintainer can file: title, versions, expected against what happened,
the first step where the two part, k of N, the counterfactual, the one
command that replays it, and the story. It claims only what those runs
showed.

Exit codes: 0 written (findings about the locks are the page's content,
not errors), 2 bad input, or a cell the harness could not run (the page
is written, that cell saying why), 130 interrupted (nothing is written
to FILE).`,
		Example: `  sim findings                              # every lock and program: about 100 minutes on 2 cores
  sim findings --jobs 2                     # two shards at once on this machine, merged: about 52 minutes
  sim findings --only sesamecare-redlock    # one program, when it releases a new version
  sim findings --only redsync,rueidislock --hunt-budget 2m
  sim findings --report node-redlock        # its findings as issues: docs/findings/node-redlock-redis.md and -redlock.md`,
		Args: usage(cobra.NoArgs, "findings: takes no arguments; name locks with --only"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.flags = cmd.Flags()
			report := o.report != ""
			if err := refuseIdle(o.flags,
				idleFlag{"only", report, "with --report (it names the one lock)"},
				idleFlag{"hunt-budget", report, "with --report (it hunts nothing)"},
				idleFlag{"hunt-runs", report, "with --report (it hunts nothing)"},
				idleFlag{"shard", report, "with --report"},
				idleFlag{"jobs", report, "with --report"},
				idleFlag{"jobs", o.shard != "", "with --shard (a shard plays in one process)"},
				idleFlag{"balance", report || (o.shard == "" && o.jobs <= 1), "without --shard or --jobs (one process plays every lock)"},
				idleFlag{"repeat", !report, "without --report"}); err != nil {
				return err
			}
			if report {
				return cmdFindingsReport(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if o.jobs > 1 {
				if _, err := checkFindings(o); err != nil {
					return err
				}
				return cmdFindingsJobs(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return cmdFindings(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringSliceVar(&o.only, "only", nil, "refresh only these locks (`NAME,...`: a lock, a program's folder under examples/, or a subject's name)")
	f.StringVar(&o.doc, "doc", filepath.Join("docs", "findings.md"), "the Markdown page to write (`FILE`; FILE's .html and .json beside it)")
	f.StringVar(&o.out, "out", "", "where the runs go (`DIR`; default runs/findings-<time>)")
	f.StringVar(&o.examples, "examples", "examples", "the folder whose client programs are played (`DIR`)")
	f.DurationVar(&o.huntBudget, "hunt-budget", 45*time.Second, "each hunt's search time (`D`; its shrinking comes after)")
	f.IntVar(&o.huntRuns, "hunt-runs", hunt.DefaultRuns, "each hunt's most candidates (`N`)")
	f.Int64Var(&o.seed, "seed", 1, "seed `S` of the hunts")
	f.StringVar(&o.shard, "shard", "", "play only shard `I/N` of the locks, into a --doc of its own (sim findings merge joins them); auto: the index from "+sharding.EnvJobIndex+" (a Kubernetes Indexed Job) or "+sharding.EnvShardIndex+", both from 0")
	f.IntVar(&o.jobs, "jobs", 1, "play the locks in `N` processes at once, each a shard of the run (as --shard I/N), and merge their pages into --doc")
	f.StringVar(&o.balance, "balance", "", "deal the locks to the shards by their rows' times on the page `FILE` (a findings .json), longest first, so that the shards end about together (default: every Nth lock; --jobs: --doc's .json when it exists)")
	f.IntVar(&o.shards, "shards", 0, "the shard count `N` of --shard auto (default: "+sharding.EnvShards+")")
	f.StringVar(&o.report, "report", "", "write docs/findings/`NAME`.md instead of the page: each finding the page lists about lock NAME (and its hunt's), played again --repeat times beside its reference, as an issue its maintainer can act on")
	f.IntVar(&o.repeat, "repeat", DefaultReportRepeat, "with --report: how many times each finding is played (`N`): the report says k of N")
	cmd.AddCommand(findingsMergeCmd(), findingsCostCmd(), findingsJudgeCmd(), findingsReplayCmd())
	return cmd
}

// claimRuns claims o's --out, runs/findings-<time> when not given (and
// sets o.out to it).
func (o *findingsOptions) claimRuns() (*outdir.Dir, error) {
	if o.out == "" {
		o.out = filepath.Join("runs", "findings-"+time.Now().Format("20060102-150405"))
	}
	return claimOut(o.out, outdir.Runs, outID("sim findings"))
}

// checkFindings refuses flags of o that no run of it could take, and
// returns the page --doc's .json holds (empty when there is none).
func checkFindings(o findingsOptions) (*findings.Report, error) {
	if o.huntBudget <= 0 || o.huntRuns < 1 {
		return nil, errors.New("--hunt-budget: expected a positive duration; --hunt-runs: expected 1 or more")
	}
	if o.jobs < 1 {
		return nil, fmt.Errorf("--jobs %d: expected 1 or more", o.jobs)
	}
	base, err := pageBase(o.doc)
	if err != nil {
		return nil, err
	}
	report, err := findings.Load(base + ".json")
	if err != nil {
		return nil, asFlag("--doc", err)
	}
	return report, nil
}

func cmdFindings(ctx context.Context, o findingsOptions, stdout, stderr io.Writer) error {
	report, err := checkFindings(o)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(o.doc, ".md")
	if o.shard, err = resolveShard(o.shard, o.shards, os.LookupEnv); err != nil {
		return err
	}
	var shard sharding.Shard
	if o.shard != "" {
		if shard, err = sharding.Parse(o.shard); err != nil {
			return input.AsFlag(err)
		}
		if !o.flags.Changed("doc") {
			return fmt.Errorf("--shard %s: give the shard a --doc of its own (e.g. shard-%d/findings.md); sim findings merge writes %s", o.shard, shard.I, o.doc)
		}
		// A shard's page holds its locks only.
		report.Subjects, report.Shard = nil, o.shard
	}
	var times map[string]float64
	if o.balance != "" && shard.N > 1 {
		if times, err = rowTimes(o.balance); err != nil {
			return err
		}
	}
	all, err := subjects(ctx, o.examples)
	if err != nil {
		return err
	}
	subs, err := only(all, o.only)
	if err != nil {
		return err
	}
	subs = ofShard(subs, shard, times)
	// A subject whose program cannot start is not played, and its row is
	// never written over with an empty one: the run says how to mend it
	// and exits 2, at once when it plays nothing else.
	var unplayable []string
	subs = slices.DeleteFunc(subs, func(s subject) bool {
		if s.err != nil {
			unplayable = append(unplayable, s.Name+": "+mendHint(s.Program, s.err))
		}
		return s.err != nil
	})
	if len(unplayable) > 0 && len(subs) == 0 {
		return fmt.Errorf("nothing played, %s left as it was: %s", o.doc, strings.Join(unplayable, "; "))
	}
	var stories []*scenarios.Scenario
	list, err := scenarios.Select(true, nil)
	if err != nil {
		return err
	}
	for _, sc := range list {
		if sc.Generator == nil {
			stories = append(stories, sc)
		}
	}
	dir, err := o.claimRuns()
	if err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()

	// Plan every subject's matrix first, so that the bar knows the work.
	type planned struct {
		s *subject
		m *matrix.Matrix
		// host names the version of its servers it plays on (none: the
		// servers come in one version); server says it ("etcd 3.7.3");
		// hunt says the subject is hunted after it (on the default).
		host   runner.Host
		server string
		hunt   bool
		// dir is where its matrix plays.
		dir string
	}
	var plan []planned
	// One reference run per lock, story and server version, for all.
	refs := map[string]map[string]*runner.Outcome{}
	total := 0
	for i := range subs {
		s := &subs[i]
		if s.err != nil {
			continue
		}
		// The stories of its servers: those its lock cannot be put in
		// (a node it lacks, a second key, a wait) stay, as n/a cells
		// that say why; stories of other servers are no business of it.
		var mine []*scenarios.Scenario
		own, err := programStories(s.Program)
		if err != nil {
			return err
		}
		for _, sc := range append(stories, own...) {
			if l, err := clients.Lookup(sc.Lock); err == nil && l.Backend == s.backend {
				mine = append(mine, sc)
			}
		}
		versions := serverVersions(*s)
		clocked := clockedPass(*s, mine)
		if clocked != "" {
			versions = append(versions, clocked)
		}
		for i, v := range versions {
			p := planned{s: s, hunt: i == 0}
			stories := mine
			if v == clocked && i > 0 {
				stories = slices.DeleteFunc(slices.Clone(mine), func(sc *scenarios.Scenario) bool { return !sc.ClockOnNode() })
			}
			folder := slug(s.Name)
			if v != "" {
				p.host = runner.Host{Versions: map[clients.Backend]string{s.backend: v}}
				p.server = string(s.backend) + " " + v
				if i > 0 {
					folder += "-" + slug(p.server)
				}
			}
			sub, err := dir.Sub(folder, outdir.Matrix, outID("sim findings"))
			if err != nil {
				return asFlag("--out", err)
			}
			p.dir = sub.Path()
			if p.m, err = planFindings(s.Lock, stories, p.dir, s.problem()); err != nil {
				return err
			}
			clocklessNA(p.m, s.backend, v)
			if refs[v] == nil {
				refs[v] = map[string]*runner.Outcome{}
			}
			p.m.Refs = refs[v]
			total += len(p.m.Playable())
			if p.hunt {
				total++
			}
			plan = append(plan, p)
		}
	}
	// locksim's own locks first: their cells are the references of the
	// programs' cells.
	slices.SortStableFunc(plan, func(a, b planned) int {
		if (a.s.Program == nil) == (b.s.Program == nil) {
			return 0
		}
		if a.s.Program == nil {
			return -1
		}
		return 1
	})
	bar := newProgress(stderr, total)
	var failed []string // the cells the harness could not run
	hunts := 0          // a lock each, hunted once whatever its servers' versions
	for _, p := range plan {
		if p.hunt {
			hunts++
		}
	}
	fmt.Fprintf(stderr, "sim findings: %d lock(s), %d story run(s) and hunt(s), into %s\n", hunts, total, o.out)
	for _, p := range plan {
		s, m := p.s, p.m
		started := time.Now()
		load := watchLoad()
		ro := runner.Options{Seed: o.seed, ClientCmd: s.Program, Host: p.host}
		m.Play(ctx, reports.Play, ro, func(n, _ int, c *matrix.Cell) {
			bar.step(s.Name + ": " + c.Scenario)
		})
		if ctx.Err() != nil {
			return interrupted("interrupted; nothing written to %s; the runs so far are in %s", o.doc, o.out)
		}
		if err := replayUnknown(ctx, m, p.dir, p.s, ro, bar); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return interrupted("interrupted; nothing written to %s; the runs so far are in %s", o.doc, o.out)
		}
		if f := m.Failed(); f != nil { // its cell says so; the others go on
			failed = append(failed, fmt.Sprintf("%s on %s: %s", s.Name, f.Scenario, f.Err))
		}
		s.Cells = append(s.Cells, findingsCells(s.Subject, m, p.server, !p.hunt)...)
		if p.hunt {
			bar.say(s.Name + ": hunting")
			s.Hunt = huntSubject(ctx, s.Subject, filepath.Join(o.out, slug(s.Name), "hunt"), o)
			if ctx.Err() != nil {
				return interrupted("interrupted; nothing written to %s; the runs so far are in %s", o.doc, o.out)
			}
			s.Hunt.Server = p.server
			bar.step(s.Name + ": hunt " + s.Hunt.Word(true))
		}
		s.Seconds += time.Since(started).Seconds()
		s.Date = time.Now().Format("2006-01-02")
		s.Load, s.Cores = max(s.Load, load.stop()), runtime.NumCPU()
	}
	bar.done()
	var done []findings.Subject
	for _, s := range subs {
		done = append(done, s.Subject)
	}
	for _, k := range report.Replace(done) {
		fmt.Fprintf(stderr, "sim findings: not written over an idle row: %s\n", k)
	}
	report.Command = "bin/sim findings"
	report.Seed = o.seed
	report.Modules = lockModules()
	report.Machine = fmt.Sprintf("Played on %d cores, %s.%s", runtime.NumCPU(), runtime.Version(), versionsLine())
	if err := writeFindings(report, o.doc, base, stdout); err != nil {
		return err
	}
	if len(unplayable) > 0 {
		return fmt.Errorf("written, but not these lock(s), whose rows are left as they were: %s", strings.Join(unplayable, "; "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("written, but the harness could not run %d cell(s) (each says why): %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// planFindings plans lock's matrix of stories into out, as sim findings
// plays it: without counterfactuals.
func planFindings(lock string, stories []*scenarios.Scenario, out string, program func(*scenarios.Scenario) error) (*matrix.Matrix, error) {
	m := matrix.Plan([]string{lock}, stories, out, program)
	for _, c := range m.Playable() {
		// A finding is a lock's verdict against its reference; the
		// counterfactuals are the stories' own business (sim run).
		v, err := scenarios.Resolve(c.Played, scenarios.Changes{NoCounterfactual: true})
		if err != nil {
			return nil, err
		}
		c.Played, c.CFSkipped = v.Scenario, "sim findings plays no counterfactual"
	}
	return m, nil
}

// replayUnknown plays again, up to runner.UnknownTries in all, every story of
// m whose cell ended unknown (the machine too busy to trust its timing),
// with its reference, each time into a folder of its own, and puts the
// new cell in the old one's place.
func replayUnknown(ctx context.Context, m *matrix.Matrix, dir string, s *subject, o runner.Options, bar *progress) error {
	for try := 2; try <= runner.UnknownTries && ctx.Err() == nil; try++ {
		var again []*scenarios.Scenario
		for _, c := range m.Ordered() {
			if c.Kind() == matrix.KindUnknown {
				i := slices.IndexFunc(m.Scenarios, func(sc *scenarios.Scenario) bool { return sc.Name == c.Scenario })
				again = append(again, m.Scenarios[i])
			}
		}
		if len(again) == 0 {
			return nil
		}
		bar.say(fmt.Sprintf("%s: %d unknown cell(s), try %d of %d", s.Name, len(again), try, runner.UnknownTries))
		r, err := planFindings(s.Lock, again, filepath.Join(dir, fmt.Sprintf("try-%d", try)), s.problem())
		if err != nil {
			return err
		}
		r.Play(ctx, reports.Play, o, func(int, int, *matrix.Cell) {})
		for _, c := range r.Ordered() {
			m.Cells[[2]string{c.Lock, c.Scenario}] = c
		}
	}
	return nil
}

// findingsCells are s's cells of the page, from its matrix as played on
// server ("etcd 3.7.3"; "" for servers that come in one version); other
// says it is not the default version, which the replay command then names.
func findingsCells(s findings.Subject, m *matrix.Matrix, server string, other bool) []findings.Cell {
	var out []findings.Cell
	for _, c := range m.Ordered() {
		cmd := replay(s, c)
		if c.Kind() == matrix.KindNA {
			cmd = "" // not playable with this lock: nothing to replay
		} else if other && server != "" {
			cmd += " --server-version " + strings.Replace(server, " ", "=", 1)
		}
		out = append(out, findings.Cell{Story: c.Scenario, Kind: c.Kind(), Text: c.Text(0), Command: cmd, Notice: c.Notice, Server: server, Fixed: c.Fixed})
	}
	return out
}

// clocklessNA makes n/a the cells of m whose story moves a server's
// clock, when version v of backend b takes no clock fault (Debian's
// etcd): the run would refuse to start (runner: clockedFor).
func clocklessNA(m *matrix.Matrix, b clients.Backend, v string) {
	bk, _ := backends.Lookup(b)
	cv, ok := bk.(backends.ClockVersioned)
	if !ok {
		return
	}
	why := cv.ClocklessIn(v)
	if why == "" {
		return
	}
	for _, c := range m.Ordered() {
		if c.Played != nil && c.Played.ClockOnNode() {
			c.Played, c.Ref, c.NA = nil, nil, fmt.Sprintf("%s %s: %s", b, v, why)
		}
	}
}

// serverVersions are the versions of s's servers its stories are played
// on, the default first: for a registered lock whose servers come in
// several versions here (backends.Versioned: etcd), each of them; for a
// client program, the default alone (its library is the subject, not the
// server; clockedPass adds one for its clock stories); [""] for servers
// of one version.
func serverVersions(s subject) []string {
	b, _ := backends.Lookup(s.backend)
	vb, ok := b.(backends.Versioned)
	if !ok {
		return []string{""}
	}
	vs := vb.Versions()
	if len(vs) == 0 {
		return []string{""} // none here: the default's error says why
	}
	if s.Program != nil {
		return vs[:1]
	}
	return vs
}

// clockedPass is the version a client program's stories that move a
// server's clock are played on besides its default (which plays them as
// n/a cells saying why: Debian's etcd takes no clock fault): the newest
// one a clock fault reaches. "" for a registered lock (it plays every
// version), for servers whose default takes clock faults, or when s has
// no such story or no such version is here.
func clockedPass(s subject, stories []*scenarios.Scenario) string {
	if s.Program == nil || !slices.ContainsFunc(stories, (*scenarios.Scenario).ClockOnNode) {
		return ""
	}
	b, _ := backends.Lookup(s.backend)
	cv, ok := b.(backends.ClockVersioned)
	if !ok || cv.ClocklessIn("") == "" {
		return ""
	}
	v, err := cv.ClockedVersion()
	if err != nil {
		return ""
	}
	return v
}

// versionsLine says, for the page's header, the versions of the servers
// that come in several here: " etcd 3.4.23 (the default), 3.6.17 and
// 3.7.3 (built by make test-deps)."
func versionsLine() string {
	var out string
	for _, b := range backends.All() {
		vb, ok := b.(backends.Versioned)
		if !ok || len(vb.Versions()) == 0 {
			continue
		}
		vs := vb.Versions()
		out += fmt.Sprintf(" %s %s (the default)", b.Name(), vs[0])
		if len(vs) > 1 {
			out += ", " + findings.AndList(vs[1:]) + " (built by make test-deps)"
		}
		out += "."
	}
	return out
}

// replay is the command that plays cell c of subject s again.
func replay(s findings.Subject, c *matrix.Cell) string {
	story, lock := c.Scenario, storyLock(c.Scenario)
	if lock == "" && c.Played != nil && c.Played.File != "" { // a program's own story
		story, lock = c.Played.File, c.Played.Lock
	}
	cmd := "bin/sim run " + story
	if c.AsCounterfactual != "" {
		return cmd + " --counterfactual" // the lock is the counterfactual's
	}
	if c.Played != nil && c.Played.Lock != lock || (c.Played == nil && s.Lock != lock) {
		cmd += " --lock " + s.Lock
	}
	if s.Program != nil {
		cmd += fmt.Sprintf(" --client-cmd %q", strings.Join(s.Program, " "))
	}
	return cmd
}

// storyLock is the lock scenario name is written for.
func storyLock(name string) string {
	sc, err := scenarios.Find(name)
	if err != nil {
		return ""
	}
	return sc.Lock
}
