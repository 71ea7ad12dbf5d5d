package cli

// run.go: `sim run`, which plays scenarios on real servers and prints
// their verdicts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// runOptions are sim run's flags.
type runOptions struct {
	// out is the run directory, or the parent of the run directories when
	// more than one scenario runs.
	out    string
	expect checker.Verdict
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
	// lock plays each story with this lock instead of its own ("": its
	// own).
	lock string
	// clientCmd runs each client as this program (argv, split on spaces)
	// instead of the Go worker ("": the Go worker).
	clientCmd string
	// backend says where the servers run (--backend and the images).
	backend runner.Host
	// flags are the flags as given, to refuse one with no effect (nil:
	// none given).
	flags *pflag.FlagSet
}

func runCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run NAME|REGEX|FILE.yaml...",
		Short: "run scenarios and print their verdicts (--all: the whole catalogue)",
		Long: `Run scenarios on real servers: the narration on stderr, the verdict on
stdout, every file of the run in its run directory. A NAME is a catalogue
scenario (sim list), a FILE.yaml a scenario of your own; a REGEX that is not
a scenario's name runs every match.

Exit codes: 0 every verdict as expected (and, with --counterfactual, every
counterfactual flipped), 1 one was not, 2 the harness failed (bad input, a
server that would not start, a story that did not happen as told: one line
naming the step, what was claimed and what happened), 130 interrupted.`,
		Example: `  sim run redlock-clock-jump
  sim run redlock-clock-jump --counterfactual   # the story without its cause: the verdict must flip
  sim run redlock-clock-jump --repeat 20        # how often each verdict comes out
  sim run redis-ttl-expiry --lock redlock       # the same story against another lock
  sim run 'redlock-.*' --out runs/ci --junit junit.xml --markdown summary.md
  sim run my-scenario.yaml --step               # workshop mode`,
		ValidArgsFunction: completeScenarios(nil),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 && !o.all {
				return errors.New("sim run needs a scenario name, a regex or a file, or --all (sim list shows them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.targets, o.flags = args, cmd.Flags()
			return cmdRun(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.out, "out", "", "run directory `DIR` (default runs/<scenario>-<time>); when more than one scenario runs, DIR is the parent and each run goes to DIR/<scenario>")
	f.BoolVar(&o.all, "all", false, "run every scenario of the catalogue")
	f.StringVar((*string)(&o.expect), "expect", "", "expected verdict `V`: safe, unsafe, leaked or hung (default: the scenario's)")
	f.StringVar(&o.lock, "lock", "", "play the story with lock `X` (sim locks) instead of its own; X needs the same servers (the backend sim locks names), judged against the lock it stands in for, played on the same story into DIR/reference (exit 1 when X does worse; --expect V judges it against V instead); a counterfactual that changes the lock is skipped")
	f.StringVar(&o.clientCmd, "client-cmd", "", "run each client as the program `CMD` (split on spaces) instead of locksim's Go worker: a client in any language speaking locksim worker protocol v1 or v2 (docs/protocol.md), e.g. \"node examples/node-redlock/client.js\"; judged against locksim's own lock on the same story, as --lock is")
	backendFlags(f, &o.backend)
	f.Int64Var(&o.seed, "seed", 0, "seed `N` of a generator scenario's schedules (default: the time); a scripted story draws nothing")
	f.StringVar(&o.junit, "junit", "", "write JUnit XML to `FILE`: one test case per scenario run, a failure when the verdict differs from the expected one")
	f.StringVar(&o.markdown, "markdown", "", "write a Markdown summary table of the runs to `FILE` (for CI pages, e.g. --markdown \"$GITHUB_STEP_SUMMARY\")")
	f.BoolVar(&o.step, "step", false, "workshop mode: stop before each step of the story, show who holds the lock where, and wait for Enter (EOF: go on)")
	f.BoolVar(&o.counterfactual, "counterfactual", false, "also play the story without its cause (or with its defence removed), into DIR/counterfactual; exit 1 unless the verdict flips")
	f.IntVar(&o.trials, "trials", 0, "generator scenarios (gen-*): play `M` trials (default: the scenario's); the run directory keeps the first violated one")
	f.DurationVar(&o.duration, "duration", 0, "generator scenarios: how long the clients loop in a trial (`D`, e.g. 500ms)")
	f.IntVar(&o.clients, "clients", 0, "generator scenarios: how many client processes (`K`) loop")
	f.IntVar(&o.repeat, "repeat", 1, "run each scenario `N` times (into DIR/run-1..N) and say how often each verdict came out; exit 1 unless all N match")
	f.BoolVar(&o.json, "json", false, "print result.json to stdout instead of the verdict line")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no narration on stderr")
	cmd.RegisterFlagCompletionFunc("lock", completeLocks)
	cmd.RegisterFlagCompletionFunc("expect", completeVerdicts)
	return cmd
}

// checkRun checks sim run's flags.
func checkRun(o *runOptions) error {
	if err := checkExpect(o.expect); err != nil {
		return err
	}
	if err := checkBackend(o.backend); err != nil {
		return err
	}
	if err := errors.Join(checkOutFile("--junit", o.junit), checkOutFile("--markdown", o.markdown)); err != nil {
		return err
	}
	if _, err := clients.Lookup(o.lock); o.lock != "" && err != nil {
		return fmt.Errorf("--lock: %w", err)
	}
	switch {
	case o.trials < 0 || o.trials > 100000:
		return fmt.Errorf("--trials: expected 1 to 100000, got %d", o.trials)
	case o.duration < 0:
		return fmt.Errorf("--duration: expected a positive duration, got %v", o.duration)
	case o.clients < 0 || o.clients > 64:
		return fmt.Errorf("--clients: expected 1 to 64, got %d", o.clients)
	case o.repeat < 1 || o.repeat > 10000:
		return fmt.Errorf("--repeat: expected 1 to 10000, got %d", o.repeat)
	case o.repeat > 1 && o.step:
		return errors.New("--repeat and --step do not go together: a workshop plays a story once")
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return nil
}

// checkExpect accepts an empty --expect or one of the verdicts.
func checkExpect(v checker.Verdict) error {
	if v != "" && !slices.Contains(scenarios.Verdicts, v) {
		return fmt.Errorf("--expect: expected safe, unsafe, leaked or hung, got %q", v)
	}
	return nil
}

// changes are the changes sim run's flags make to each story
// (scenarios.Resolve): --lock, and --trials, --duration and --clients,
// which only a generator scenario takes (a scripted story's steps name
// its clients).
func changes(list []*scenarios.Scenario, o runOptions) (scenarios.Changes, error) {
	c := scenarios.Changes{Lock: o.lock, Trials: o.trials, Duration: o.duration, Clients: o.clients}
	if o.trials == 0 && o.duration == 0 && o.clients == 0 {
		return c, nil
	}
	for _, sc := range list {
		if sc.Generator == nil {
			return c, fmt.Errorf("--trials, --duration and --clients apply to generator scenarios (sim list gen-); %s is a scripted story", sc.Name)
		}
	}
	return c, nil
}

// planned is one scenario sim run plays: the story as it runs (with
// --lock's lock), the name it goes by, and why its counterfactual is
// skipped ("": it is not).
type planned struct {
	sc     *scenarios.Scenario
	name   string
	skipCF string
	// ref is the story as its reference lock plays it, when a lock of
	// the user's replaces the story's (referenceOf); nil: the run meets
	// the story's expected verdict.
	ref *scenarios.Scenario
}

// referenceOf is the story sc as the lock it is judged against plays it,
// when --lock or --client-cmd puts a user's lock in the story: the lock
// played stands in for (scenarios.ReferenceFor), played by the harness's
// own worker. nil when the played lock is that reference itself, when
// --expect says what to meet instead, or when the reference cannot play
// the story (scenarios.NoReference).
func referenceOf(sc, played *scenarios.Scenario, o runOptions) (*scenarios.Scenario, error) {
	lock := scenarios.ReferenceFor(sc, played.Lock, o.clientCmd != "")
	if o.expect != "" || (o.lock == "" && o.clientCmd == "") || (o.clientCmd == "" && played.Lock == lock) ||
		scenarios.NoReference(sc, lock) != "" {
		return nil, nil
	}
	v, err := scenarios.Resolve(sc, scenarios.Changes{Lock: lock, Reference: true})
	if err != nil {
		return nil, fmt.Errorf("the reference %s: %w", lock, err)
	}
	return v.Scenario, nil
}

func cmdRun(ctx context.Context, o runOptions, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if err := checkRun(&o); err != nil {
		return err
	}
	// Load every scenario first, so a typo fails before anything starts.
	list, err := scenarios.Select(o.all, o.targets)
	if err != nil {
		return err
	}
	if err := refuseIdle(o.flags, runIdle(o, list)...); err != nil {
		return err
	}
	change, err := changes(list, o)
	if err != nil {
		return err
	}
	if o.step && len(list) > 1 {
		return fmt.Errorf("--step plays one story; %d scenarios selected", len(list))
	}
	plan := make([]planned, 0, len(list))
	for _, sc := range list {
		v, err := scenarios.Resolve(sc, change)
		if err != nil {
			if o.lock != "" && len(list) > 1 {
				err = fmt.Errorf("%w (sim matrix --locks %s runs only the stories it can play)", err, o.lock)
			}
			return err
		}
		p := planned{sc: v.Scenario, name: v.Name()}
		if o.counterfactual {
			p.skipCF = v.SkipCF
		}
		if p.ref, err = referenceOf(sc, p.sc, o); err != nil {
			return err
		}
		plan = append(plan, p)
	}
	if err := checkRunDirs(o, plan); err != nil {
		return err
	}
	if len(plan) > 1 && o.out != "" {
		if _, err := claimOut(o.out, outdir.Runs, "sim run"); err != nil {
			return err
		}
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	var beforeStep func(context.Context, runner.StepView)
	if o.step {
		w, stopReading := newWorkshop(stderr, stdin)
		defer stopReading()
		beforeStep = w.beforeStep
	}
	var cases []reports.Case
	// The CI outputs are written whatever happens, interrupted included.
	defer func() {
		if cerr := writeCIOutputs(o, cases); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	// failed is the run's verdict so far: a harness failure (said as it
	// happened) outweighs a verdict not as expected.
	var failed error
	for _, p := range plan {
		sc := p.sc
		var log io.Writer = stderr
		if o.quiet && !o.step {
			log = nil
		}
		if p.skipCF != "" {
			switch {
			case log != nil:
				fmt.Fprintf(log, "sim: %s: counterfactual skipped: %s\n", p.name, p.skipCF)
			case o.json:
				fmt.Fprintf(stderr, "sim: note: %s: counterfactual skipped: %s\n", p.name, p.skipCF)
			}
		}
		base := runDir(o.out, sc.Name, len(plan))
		if base == "" {
			base = runner.DefaultOut(sc.Name, time.Now())
		}
		if o.repeat > 1 {
			if _, err := claimOut(base, outdir.Runs, "sim run --repeat"); err != nil {
				return err
			}
		}
		verdicts := map[string]int{}
		expected := string(expectedOf(sc, o)) // a run's own, once one has run (fixed_in)
		for i := 1; i <= o.repeat; i++ {
			started := time.Now()
			out, name := base, p.name
			if o.repeat > 1 {
				out, name = repeatDir(out, i, o.repeat), fmt.Sprintf("%s#%d", p.name, i)
			}
			res, err := reports.Play(ctx, sc, runner.Options{Out: out, Seed: o.seed + int64(i-1), Log: log, Expected: o.expect, BeforeStep: beforeStep,
				Counterfactual: o.counterfactual && p.skipCF == "", ClientCmd: strings.Fields(o.clientCmd), Host: o.backend,
				Reference: p.ref, Departures: p.ref != nil})
			if err != nil {
				if ctx.Err() != nil {
					return interrupted("interrupted; every server and client was stopped; the history so far is in %s (verdict interrupted)", out)
				}
				cases = append(cases, reports.Case{Name: name, Err: err, Duration: time.Since(started)})
				err = fmt.Errorf("%s: %w", name, err)
				if len(plan) == 1 && o.repeat == 1 {
					return err
				}
				warn(stderr, err)
				failed = errFailed
				verdicts["harness failure"]++
				continue
			}
			cases = append(cases, reports.Case{Name: name, Run: res, Duration: time.Since(started)})
			verdicts[string(res.Check.Verdict)]++
			if expected = string(res.Expected); res.Fixed != "" {
				expected += ", " + res.Fixed + "+ fixing the story's bug"
			}
			switch {
			case o.json:
				b, _ := json.MarshalIndent(reports.NewResult(res), "", "  ")
				fmt.Fprintln(stdout, string(b))
			case o.repeat == 1:
				printVerdictAs(stdout, res, p.name)
				if p.skipCF != "" {
					fmt.Fprintf(stdout, "  counterfactual skipped: %s\n", p.skipCF)
				}
			}
			if !res.Matches() && failed == nil {
				failed = errMismatch
			}
		}
		if o.repeat > 1 && !o.json {
			fmt.Fprintf(stdout, "%s: %s (expected %s); run directories under %s\n", p.name, tally(verdicts, o.repeat), expected, filepath.Dir(repeatDir(base, 1, o.repeat)))
		}
	}
	return failed
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

func expectedOf(sc *scenarios.Scenario, o runOptions) checker.Verdict {
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

// checkRunDirs checks, before any server starts, every directory sim
// run will write under --out: the parent of several scenarios' runs,
// each scenario's, and each repeat's.
func checkRunDirs(o runOptions, plan []planned) error {
	if o.out == "" {
		return nil // new directories under runs/
	}
	if len(plan) > 1 {
		if err := checkOutDir(o.out, outdir.Runs); err != nil {
			return err
		}
	}
	for _, p := range plan {
		base := runDir(o.out, p.sc.Name, len(plan))
		if o.repeat > 1 {
			if err := checkOutDir(base, outdir.Runs); err != nil {
				return err
			}
		}
		for i := 1; i <= o.repeat; i++ {
			if err := checkOutDir(repeatDir(base, i, o.repeat), outdir.Run); err != nil {
				return err
			}
		}
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
		if err := writeOutFile("--junit", o.junit, b.Bytes()); err != nil {
			return err
		}
	}
	if o.markdown != "" {
		return writeOutFile("--markdown", o.markdown, []byte(reports.SummaryMarkdown(cases)))
	}
	return nil
}

func printVerdict(w io.Writer, r *runner.Outcome) {
	printVerdictAs(w, r, r.Scenario.Name)
}

// printVerdictAs prints the verdict lines of a run that goes by name
// ("redis-ttl-expiry with lock redlock").
func printVerdictAs(w io.Writer, r *runner.Outcome, name string) {
	status := "as expected"
	switch ref := r.Reference; {
	case ref != nil && r.Matches():
		status = "at least as good as the reference " + ref.Lock
	case ref != nil:
		status = "NOT as good as the reference " + ref.Lock
	case r.Check.Verdict != r.Expected:
		status = "NOT as expected (" + string(r.Expected) + ")"
	}
	if r.Fixed != "" {
		status += " (" + scenarios.FixedSentence("story", r.Fixed, r.Versions) + ")"
	}
	fmt.Fprintf(w, "%s: %s\n", name, r.Check.Summary)
	fmt.Fprintf(w, "  verdict %s, %s; %d violation(s); %v; run directory %s\n",
		r.Check.Verdict, status, r.Check.Violations, r.Duration.Round(time.Millisecond), r.Dir)
	if ref := r.Reference; ref != nil {
		fmt.Fprintf(w, "  %s\n", ref.Sentence(r))
	}
	if c := r.Counterfactual; c != nil {
		fmt.Fprintf(w, "  %s\n", c.Sentence())
	}
}
