package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"locksim/clients"
	"locksim/env"
	"locksim/reports"
	"locksim/runner"
	"locksim/scenarios"
)

// Exit codes.
const (
	exitOK          = 0
	exitMismatch    = 1
	exitHarness     = 2
	exitInterrupted = 130
)

const usage = `sim: lock-safety scenarios on real servers

usage:
  sim list [REGEX]            the scenario catalogue, one line each
  sim explain NAME            what a scenario shows and its steps, without running it
  sim run NAME|REGEX|FILE.yaml...
                              run scenarios and print their verdicts; a REGEX
                              that is not a scenario's name runs every match
  sim run --all               run the whole catalogue
  sim report DIR              rebuild a run directory's reports from its history
                              (re-checked): report.html, timeline.svg, ...
  sim check DIR               re-check a run directory's history offline; exit 0
                              when the verdict is result.json's expected one
  sim locks [--mutants]       the lock algorithms a scenario can name (--mutants:
                              also the deliberately broken ones the tests use)
  sim sweep NAME --param KEY=FROM..TO [--points N] [--trials M] [--locks a,b,c]
                              violation rates of a generator scenario across a
                              parameter: sweep.csv and plots (sim sweep --help)
  sim clean                   remove what runs killed with kill -9 left behind
                              (temp dirs, SysV segments; every start does it too)
  sim help                    this text (also: sim COMMAND --help)
  sim --version               the version and the commit it was built from

sim run flags:
  --out DIR        run directory (default runs/<scenario>-<time>); when more
                   than one scenario runs, DIR is the parent and each run goes
                   to DIR/<scenario>
  --all            run every scenario of the catalogue
  --expect V       expected verdict: safe, unsafe or leaked (default: the scenario's)
  --seed N         seed for every random choice (default: the time)
  --junit FILE     write JUnit XML: one test case per scenario run, a failure
                   when the verdict differs from the expected one
  --markdown FILE  write a Markdown summary table of the runs (for CI pages,
                   e.g. --markdown "$GITHUB_STEP_SUMMARY")
  --step           workshop mode: stop before each step of the story, show who
                   holds the lock where, and wait for Enter (EOF: go on)
  --counterfactual also play the story without its cause (or with its defence
                   removed), into DIR/counterfactual; exit 1 unless the
                   verdict flips
  --trials M       generator scenarios (gen-*): play M trials (default: the
                   scenario's); the run directory keeps the first violated one
  --duration D     generator scenarios: how long the clients loop in a trial
  --clients K      generator scenarios: how many client processes loop
  --repeat N       run each scenario N times (into DIR/run-1..N) and say how
                   often each verdict came out; exit 1 unless all N match
  --json           print result.json to stdout instead of the verdict line
  -q               no narration on stderr

sim check flags:
  --expect V       the verdict to expect instead of result.json's

Each run directory holds history.jsonl, result.json, summary.md, report.html
(verdict, evidence, timeline), timeline.svg, junit.xml and history.html.

exit codes: 0 verdicts as expected, 1 a verdict differed, 2 the harness failed
(bad input, a server that would not start), 130 interrupted.
`

// Main runs the CLI and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		// Whatever happens, nothing the harness started outlives it.
		if p := recover(); p != nil {
			env.Cleanup()
			panic(p)
		}
		env.Cleanup()
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitHarness
	}
	// Help for any command is the usage, on stdout, and success.
	if args[0] != "sweep" && slices.ContainsFunc(args[1:], func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	if args[0] == "clean" {
		return cmdClean(args[1:], stdout, stderr)
	}
	// Every start removes what killed runs left behind (sim clean).
	if r, err := env.Reap(env.ReapRoots()...); !r.Empty() || err != nil {
		fmt.Fprintf(stderr, "sim: %s\n", reapedLine(r, err))
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "explain":
		return cmdExplain(args[1:], stdout, stderr)
	case "run":
		return cmdRun(args[1:], stdin, stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "locks":
		return cmdLocks(args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "sim: unknown command %q (sim help lists them)\n", args[0])
	return exitHarness
}

// version is the module's version and the commit it was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "sim (no build information)"
	}
	v := "sim " + bi.Main.Version
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			v += ", commit " + st.Value
		case "vcs.modified":
			if st.Value == "true" {
				v += " (with uncommitted changes)"
			}
		}
	}
	return v
}

// cmdClean removes, and lists, what runs killed before they could clean
// up left behind: temp dirs whose owner process is gone, and their
// PostgreSQL's SysV shared memory. Run directories are never touched.
func cmdClean(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "sim: usage: sim clean")
		return exitHarness
	}
	r, err := env.Reap(env.ReapRoots()...)
	for _, d := range r.Dirs {
		fmt.Fprintf(stdout, "removed %s\n", d)
	}
	for _, id := range r.Segments {
		fmt.Fprintf(stdout, "removed SysV shared memory segment %d\n", id)
	}
	fmt.Fprintln(stdout, reapedLine(r, nil))
	if err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// reapedLine says in one line what Reap removed.
func reapedLine(r env.Reaped, err error) string {
	s := "nothing left behind by earlier runs"
	if !r.Empty() {
		s = fmt.Sprintf("removed %d temp dir(s) (%.1f MB) and %d SysV segment(s) left by runs that were killed", len(r.Dirs), float64(r.Bytes)/1e6, len(r.Segments))
	}
	if err != nil {
		s += fmt.Sprintf("; could not remove everything: %v", err)
	}
	return s
}

// fail prints one line and returns the exit code for err.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "sim: %v\n", err)
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	return exitHarness
}

func cmdList(args []string, stdout, stderr io.Writer) int {
	pattern := "."
	if len(args) > 1 {
		fmt.Fprintln(stderr, "sim: usage: sim list [REGEX]")
		return exitHarness
	}
	if len(args) == 1 {
		pattern = args[0]
	}
	list, err := scenarios.Match(pattern)
	if err != nil {
		return fail(stderr, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tLOCK\tFAULT\tEXPECTED")
	for _, sc := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sc.Name, sc.Lock, sc.Fault, sc.Expected)
	}
	tw.Flush()
	return exitOK
}

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "sim: usage: sim explain NAME")
		return exitHarness
	}
	sc, err := scenarios.Find(args[0])
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%s\n%s\n\n", sc.Name, sc.Title)
	fmt.Fprintf(stdout, "Lock: %s, %d node(s), %d client(s), TTL %v. Expected verdict: %s.\n", sc.Lock, sc.Nodes, sc.Clients, sc.TTL, sc.Expected)
	fmt.Fprintf(stdout, "Source: %s\n\n%s\n", sc.Source, strings.TrimSpace(sc.Explain))
	if c := sc.Counterfactual; c != nil {
		fmt.Fprintf(stdout, "\nCounterfactual (sim run %s --counterfactual): %s, it must end %s.\n", sc.Name, c.Change, c.Expected)
		for _, ch := range sc.CounterfactualChanges() {
			fmt.Fprintf(stdout, "  - %s\n", ch)
		}
	}
	if len(sc.Steps) > 0 {
		fmt.Fprintf(stdout, "\nSteps:\n")
	}
	for _, st := range sc.Steps {
		line := st.Say
		if line == "" {
			line = st.Describe()
		} else if st.Do != "say" {
			line += "  [" + st.Describe() + "]"
		}
		if st.Expect != "" {
			line += "  (must end " + runner.Claim(st) + ")"
		}
		if st.Cause {
			line += "  (the cause: left out of the counterfactual)"
		}
		fmt.Fprintf(stdout, "  - %s\n", line)
	}
	return exitOK
}

func cmdLocks(args []string, stdout, stderr io.Writer) int {
	mutants := false
	switch {
	case len(args) == 1 && args[0] == "--mutants":
		mutants = true
	case len(args) > 0:
		fmt.Fprintln(stderr, "sim: usage: sim locks [--mutants]")
		return exitHarness
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tSERVERS\tWHAT IT IS")
	hidden := 0
	for _, n := range clients.Names() {
		s, _ := clients.Lookup(n)
		if s.Mutant != "" && !mutants {
			hidden++
			continue
		}
		doc := s.Doc
		if s.Mutant != "" {
			doc = "MUTANT (breaks " + s.Mutant + "): " + doc
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Backend, doc)
	}
	tw.Flush()
	if hidden > 0 {
		fmt.Fprintf(stdout, "(%d deliberately broken locks, each a mutant of one defence, are listed by sim locks --mutants)\n", hidden)
	}
	return exitOK
}

// runOptions are sim run's flags.
type runOptions struct {
	// out is the run directory, or the parent of the run directories when
	// more than one scenario runs.
	out    string
	expect string
	seed   int64
	json   bool
	quiet  bool
	// all runs the whole catalogue.
	all bool
	// junit and markdown name the CI outputs to write ("": none).
	junit, markdown string
	// step is workshop mode.
	step bool
	// counterfactual also plays each story without its cause.
	counterfactual bool
	// repeat runs each scenario that many times.
	repeat int
	// targets are the names, regexes or files given.
	targets []string
	// trials, duration and clients override a generator scenario's
	// (0: keep).
	trials   int
	duration time.Duration
	clients  int
}

func parseRun(args []string, stderr io.Writer) (runOptions, error) {
	var o runOptions
	fs := flag.NewFlagSet("sim run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.out, "out", "", "run directory")
	fs.StringVar(&o.expect, "expect", "", "expected verdict")
	fs.Int64Var(&o.seed, "seed", 0, "seed")
	fs.BoolVar(&o.json, "json", false, "print result.json")
	fs.BoolVar(&o.quiet, "q", false, "quiet")
	fs.BoolVar(&o.all, "all", false, "run the whole catalogue")
	fs.StringVar(&o.junit, "junit", "", "JUnit XML file")
	fs.StringVar(&o.markdown, "markdown", "", "Markdown summary file")
	fs.BoolVar(&o.step, "step", false, "workshop mode")
	fs.BoolVar(&o.counterfactual, "counterfactual", false, "also run the story without its cause")
	fs.IntVar(&o.repeat, "repeat", 1, "run each scenario N times")
	fs.IntVar(&o.trials, "trials", 0, "generator trials")
	fs.DurationVar(&o.duration, "duration", 0, "generator trial length")
	fs.IntVar(&o.clients, "clients", 0, "generator clients")
	// Flags may come before or after the names.
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		args = fs.Args()
		if len(args) > 0 {
			rest = append(rest, args[0])
			args = args[1:]
		}
	}
	o.targets = rest
	if len(o.targets) == 0 && !o.all {
		return o, errors.New("sim run needs a scenario name, a regex or a file, or --all (sim list shows them)")
	}
	if err := checkExpect(o.expect); err != nil {
		return o, err
	}
	switch {
	case o.trials < 0 || o.trials > 100000:
		return o, fmt.Errorf("--trials: expected 1 to 100000, got %d", o.trials)
	case o.duration < 0:
		return o, fmt.Errorf("--duration: expected a positive duration, got %v", o.duration)
	case o.clients < 0 || o.clients > 64:
		return o, fmt.Errorf("--clients: expected 1 to 64, got %d", o.clients)
	case o.repeat < 1 || o.repeat > 10000:
		return o, fmt.Errorf("--repeat: expected 1 to 10000, got %d", o.repeat)
	case o.repeat > 1 && o.step:
		return o, errors.New("--repeat and --step do not go together: a workshop plays a story once")
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return o, nil
}

// checkExpect accepts an empty --expect or one of the verdicts.
func checkExpect(v string) error {
	if v != "" && !slices.Contains(scenarios.Verdicts, v) {
		return fmt.Errorf("--expect: expected safe, unsafe or leaked, got %q", v)
	}
	return nil
}

// applyGeneratorFlags gives each generator scenario the --trials,
// --duration and --clients asked for; a scripted story refuses them (its
// steps name its clients).
func applyGeneratorFlags(list []*scenarios.Scenario, o runOptions) error {
	if o.trials == 0 && o.duration == 0 && o.clients == 0 {
		return nil
	}
	for _, sc := range list {
		if sc.Generator == nil {
			return fmt.Errorf("--trials, --duration and --clients apply to generator scenarios (sim list gen-); %s is a scripted story", sc.Name)
		}
		g := *sc.Generator
		if o.trials > 0 {
			g.Trials = o.trials
		}
		if o.duration > 0 {
			g.Duration.Duration = o.duration
		}
		if o.clients > 0 {
			sc.Clients = o.clients
		}
		sc.Generator = &g
	}
	return nil
}

// resolveTargets turns the names given into scenarios: an exact name or a
// file first; else a regex matching some names selects them all; else the
// "no such scenario, did you mean" error. Each scenario runs once.
func resolveTargets(o runOptions) ([]*scenarios.Scenario, error) {
	var list []*scenarios.Scenario
	seen := map[string]bool{}
	add := func(sc *scenarios.Scenario) {
		if !seen[sc.Name] {
			seen[sc.Name] = true
			list = append(list, sc)
		}
	}
	if o.all {
		all, err := scenarios.Catalogue()
		if err != nil {
			return nil, err
		}
		for _, sc := range all {
			add(sc)
		}
	}
	for _, t := range o.targets {
		sc, err := scenarios.Find(t)
		if err == nil {
			add(sc)
			continue
		}
		var nf *scenarios.NotFoundError
		if !errors.As(err, &nf) {
			return nil, err
		}
		matches, merr := scenarios.Match(t)
		if merr != nil || len(matches) == 0 {
			return nil, err
		}
		for _, sc := range matches {
			add(sc)
		}
	}
	return list, nil
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	o, err := parseRun(args, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	// Load every scenario first, so a typo fails before anything starts.
	list, err := resolveTargets(o)
	if err != nil {
		return fail(stderr, err)
	}
	if err := applyGeneratorFlags(list, o); err != nil {
		return fail(stderr, err)
	}
	if o.step && len(list) > 1 {
		return fail(stderr, fmt.Errorf("--step plays one story; %d scenarios selected", len(list)))
	}
	for _, sc := range list {
		for i := 1; i <= o.repeat && o.out != ""; i++ {
			if err := checkOut(repeatDir(runDir(o.out, sc.Name, len(list)), i, o.repeat)); err != nil {
				return fail(stderr, err)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code = exitOK
	var cases []reports.Case
	// The CI outputs are written whatever happens, interrupted included.
	defer func() {
		if err := writeCIOutputs(o, cases); err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
			if code == exitOK {
				code = exitHarness
			}
		}
	}()
	for _, sc := range list {
		var log io.Writer = stderr
		if o.quiet && !o.step {
			log = nil
		}
		base := runDir(o.out, sc.Name, len(list))
		if base == "" {
			base = runner.DefaultOut(sc.Name, time.Now())
		}
		verdicts := map[string]int{}
		for i := 1; i <= o.repeat; i++ {
			started := time.Now()
			out, name := base, sc.Name
			if o.repeat > 1 {
				out, name = repeatDir(out, i, o.repeat), fmt.Sprintf("%s#%d", sc.Name, i)
			}
			res, err := runner.Run(ctx, sc, runner.Options{Out: out, Seed: o.seed + int64(i-1), Log: log, Expected: o.expect, Step: o.step, Stdin: stdin, Counterfactual: o.counterfactual})
			if err != nil {
				if ctx.Err() != nil {
					fmt.Fprintf(stderr, "sim: interrupted; every server and client was stopped; the history so far is in %s (verdict interrupted)\n", out)
					code = exitInterrupted
					return code
				}
				cases = append(cases, reports.Case{Name: name, Err: err, Duration: time.Since(started)})
				code = fail(stderr, fmt.Errorf("%s: %w", name, err))
				if len(list) == 1 && o.repeat == 1 {
					return code
				}
				verdicts["harness failure"]++
				continue
			}
			cases = append(cases, reports.Case{Name: name, Run: res, Duration: time.Since(started)})
			verdicts[res.Check.Verdict]++
			switch {
			case o.json:
				b, _ := json.MarshalIndent(reports.NewResult(res), "", "  ")
				fmt.Fprintln(stdout, string(b))
			case o.repeat == 1:
				printVerdict(stdout, res)
			}
			if !res.Matches() && code == exitOK {
				code = exitMismatch
			}
		}
		if o.repeat > 1 && !o.json {
			fmt.Fprintf(stdout, "%s: %s (expected %s); run directories under %s\n", sc.Name, tally(verdicts, o.repeat), expectedOf(sc, o), filepath.Dir(repeatDir(base, 1, o.repeat)))
		}
	}
	return code
}

// tally says how often each verdict came out: "unsafe 19/20, unknown 1/20".
func tally(verdicts map[string]int, n int) string {
	keys := make([]string, 0, len(verdicts))
	for v := range verdicts {
		keys = append(keys, v)
	}
	slices.SortFunc(keys, func(a, b string) int { return verdicts[b] - verdicts[a] })
	var parts []string
	for _, v := range keys {
		parts = append(parts, fmt.Sprintf("%s %d/%d", v, verdicts[v], n))
	}
	return strings.Join(parts, ", ")
}

func expectedOf(sc *scenarios.Scenario, o runOptions) string {
	if o.expect != "" {
		return o.expect
	}
	return sc.Expected
}

// repeatDir is the run directory of the i-th of n repeats in dir.
func repeatDir(dir string, i, n int) string {
	if n == 1 {
		return dir
	}
	return filepath.Join(dir, fmt.Sprintf("run-%d", i))
}

// runDir is where a scenario's run goes: --out itself for one scenario,
// --out/NAME for several ("" lets the runner name it under runs/).
func runDir(out, name string, n int) string {
	if out != "" && n > 1 {
		return filepath.Join(out, name)
	}
	return out
}

// checkOut refuses a run directory that holds something other than a
// run: writing the run there would mix with, or overwrite, the user's
// files.
func checkOut(dir string) error {
	if dir == "" || reports.IsRunDir(dir) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %v", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %s: not empty and not a run directory; name a new or empty directory, or an earlier run's", dir)
	}
	return nil
}

// writeCIOutputs writes --junit and --markdown, when asked for.
func writeCIOutputs(o runOptions, cases []reports.Case) error {
	if o.junit != "" {
		var b bytes.Buffer
		if err := reports.WriteJUnit(&b, cases); err != nil {
			return err
		}
		if err := writeFile(o.junit, b.Bytes()); err != nil {
			return fmt.Errorf("--junit: %v", err)
		}
	}
	if o.markdown != "" {
		if err := writeFile(o.markdown, []byte(reports.SummaryMarkdown(cases))); err != nil {
			return fmt.Errorf("--markdown: %v", err)
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, data, 0o644)
}

func printVerdict(w io.Writer, r *reports.Run) {
	status := "as expected"
	if r.Check.Verdict != r.Expected {
		status = "NOT as expected (" + r.Expected + ")"
	}
	fmt.Fprintf(w, "%s: %s\n", r.Scenario.Name, r.Check.Summary)
	fmt.Fprintf(w, "  verdict %s, %s; %d violation(s); %v; run directory %s\n",
		r.Check.Verdict, status, r.Check.Violations, r.Duration.Round(time.Millisecond), r.Dir)
	if c := r.Counterfactual; c != nil {
		fmt.Fprintf(w, "  %s\n", c.Sentence())
	}
}
