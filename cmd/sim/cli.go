package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
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
  sim run NAME|FILE.yaml...   run scenarios and print their verdicts
  sim locks                   the lock algorithms a scenario can name
  sim help                    this text

sim run flags:
  --out DIR        run directory (default runs/<scenario>-<time>; one run only)
  --expect V       expected verdict: safe, unsafe or leaked (default: the scenario's)
  --seed N         seed for every random choice (default: the time)
  --json           print result.json to stdout instead of the verdict line
  -q               no narration on stderr

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
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "explain":
		return cmdExplain(args[1:], stdout, stderr)
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "locks":
		return cmdLocks(stdout)
	}
	fmt.Fprintf(stderr, "sim: unknown command %q (sim help lists them)\n", args[0])
	return exitHarness
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
	fmt.Fprintf(stdout, "\nSteps:\n")
	for _, st := range sc.Steps {
		line := st.Say
		if line == "" {
			line = st.Describe()
		} else if st.Do != "say" {
			line += "  [" + st.Describe() + "]"
		}
		fmt.Fprintf(stdout, "  - %s\n", line)
	}
	return exitOK
}

func cmdLocks(stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tSERVERS\tWHAT IT IS")
	for _, n := range clients.Names() {
		s, _ := clients.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Backend, s.Doc)
	}
	tw.Flush()
	return exitOK
}

// runOptions are sim run's flags.
type runOptions struct {
	out     string
	expect  string
	seed    int64
	json    bool
	quiet   bool
	targets []string
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
	if len(o.targets) == 0 {
		return o, errors.New("sim run needs a scenario name or file (sim list shows them)")
	}
	if o.expect != "" && !regexp.MustCompile(`^(safe|unsafe|leaked)$`).MatchString(o.expect) {
		return o, fmt.Errorf("--expect: expected safe, unsafe or leaked, got %q", o.expect)
	}
	if o.out != "" && len(o.targets) > 1 {
		return o, errors.New("--out names one run directory; give one scenario")
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return o, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	o, err := parseRun(args, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	// Load every scenario first, so a typo fails before anything starts.
	var list []*scenarios.Scenario
	for _, t := range o.targets {
		sc, err := scenarios.Find(t)
		if err != nil {
			return fail(stderr, err)
		}
		list = append(list, sc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := exitOK
	for _, sc := range list {
		var log io.Writer = stderr
		if o.quiet {
			log = nil
		}
		res, err := runner.Run(ctx, sc, runner.Options{Out: o.out, Seed: o.seed, Log: log, Expected: o.expect})
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "sim: interrupted; every server and client was stopped\n")
				return exitInterrupted
			}
			return fail(stderr, err)
		}
		if o.json {
			b, _ := json.MarshalIndent(reports.NewResult(res), "", "  ")
			fmt.Fprintln(stdout, string(b))
		} else {
			printVerdict(stdout, res)
		}
		if !res.Matches() && code == exitOK {
			code = exitMismatch
		}
	}
	return code
}

func printVerdict(w io.Writer, r *reports.Run) {
	status := "as expected"
	if !r.Matches() {
		status = "NOT as expected (" + r.Expected + ")"
	}
	fmt.Fprintf(w, "%s: %s\n", r.Scenario.Name, r.Check.Summary)
	fmt.Fprintf(w, "  verdict %s, %s; %d violation(s); %v; run directory %s\n",
		r.Check.Verdict, status, r.Check.Violations, r.Duration.Round(time.Millisecond), r.Dir)
}
