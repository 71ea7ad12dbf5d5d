package cli

// matrix.go: `sim matrix`, every story against every lock: which locks
// each story catches, and which stories each lock survives.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// matrixOptions are sim matrix's flags.
type matrixOptions struct {
	locks          string
	out            string
	seed           int64
	markdown, html string
	quiet          bool
	targets        []string
	// clientCmd runs every client as this program (argv, split on spaces).
	clientCmd string
	// backend says where the servers run.
	backend runner.Host
	// flags are the flags as given, to refuse one with no effect (nil:
	// none given).
	flags *pflag.FlagSet
}

func matrixCmd() *cobra.Command {
	var o matrixOptions
	cmd := &cobra.Command{
		Use:   "matrix --locks a,b,c [SCENARIO|REGEX...]",
		Short: "every story against every lock of its servers: a lock-by-scenario table",
		Long: `Play each scenario (default: every scripted one) with each lock of --locks
that uses the same servers (the backend sim locks names; the others are
n/a), one run after another, each with its counterfactual where it means
something for that lock, into DIR/<lock>/<scenario> (--out DIR); then print
a table with a row per scenario and a column per lock. A cell says the
verdict and whether it is the one the story expects, and the
counterfactual's verdict; or "story did not happen:" and why (the lock did
not behave as the story tells: a finding, not a failure), or "unknown" (the
machine was too slow for the story), or n/a. A lock that stands in for the
story's (another lock of its servers, or a --client-cmd program) is judged
against the lock it stands in for, played on the same story by the
harness's own worker, once for every column: "as good as the reference",
or "finding:" when it ended unsafe, leaked or hung where the reference did not,
with the first step where the two parted. With --client-cmd, a story
the client program cannot tell (a write to the protected storage, a fence,
a watchdog: worker protocol v1 has acquire, release and extend) is n/a too;
the HTML table's cell says why.

Exit codes: 0 every cell ran (verdicts that differ from the story's are
findings, not errors), 2 bad input or a cell the harness could not run,
130 interrupted (the table so far is still printed and written).`,
		Example: `  sim matrix --locks redis,redis-plain-del redis-unsafe-release
  sim matrix --locks redis,redlock 'redlock-.*' --html matrix.html
  sim matrix --locks postgres-session,postgres-xact,postgres-pooled --markdown "$GITHUB_STEP_SUMMARY"`,
		ValidArgsFunction: completeScenarios(func(sc *scenarios.Scenario) bool { return sc.Generator == nil }),
		Args:              cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.targets, o.flags = args, cmd.Flags()
			return cmdMatrix(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.locks, "locks", "", "the locks to compare, `a,b,c` (sim locks; mutants too)")
	f.StringVar(&o.out, "out", "", "where the runs go, as `DIR`/<lock>/<scenario> (default runs/matrix-<time>)")
	f.Int64Var(&o.seed, "seed", 0, "seed `N` of a generator scenario's schedules (default: the time); a scripted story draws nothing")
	f.StringVar(&o.clientCmd, "client-cmd", "", "run every client as the program `CMD` (split on spaces; docs/protocol.md) instead of locksim's Go worker")
	backendFlags(f, &o.backend)
	f.StringVar(&o.markdown, "markdown", "", "also write the table as Markdown to `FILE` (e.g. \"$GITHUB_STEP_SUMMARY\")")
	f.StringVar(&o.html, "html", "", "also write the table as one self-contained HTML page to `FILE`")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line on stderr after each run")
	cmd.RegisterFlagCompletionFunc("locks", completeLocks)
	return cmd
}

// checkMatrix checks sim matrix's flags and returns its locks.
func checkMatrix(o *matrixOptions) ([]string, error) {
	if err := checkBackend(o.backend); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.locks) == "" {
		return nil, errors.New("--locks: name the locks to compare, e.g. --locks redis,redlock (sim locks lists them)")
	}
	var locks []string
	for _, l := range strings.Split(o.locks, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if _, err := clients.Lookup(l); err != nil {
			return nil, fmt.Errorf("--locks: %w", err)
		}
		if !slices.Contains(locks, l) {
			locks = append(locks, l)
		}
	}
	if err := errors.Join(checkOutFile("--markdown", o.markdown), checkOutFile("--html", o.html)); err != nil {
		return nil, err
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return locks, nil
}

func cmdMatrix(ctx context.Context, o matrixOptions, stdout, stderr io.Writer) error {
	locks, err := checkMatrix(&o)
	if err != nil {
		return err
	}
	var list []*scenarios.Scenario
	if len(o.targets) == 0 {
		all, err := scenarios.Catalogue()
		if err != nil {
			return err
		}
		for _, sc := range all {
			if sc.Generator == nil {
				list = append(list, sc)
			}
		}
	} else if list, err = scenarios.Select(false, o.targets); err != nil {
		return err
	}
	if err := refuseIdle(o.flags, matrixIdle(o, list)...); err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "matrix-"+time.Now().Format("20060102-150405"))
	}
	var program func(*scenarios.Scenario) error
	if argv := strings.Fields(o.clientCmd); len(argv) > 0 {
		hello, err := runner.ProbeClientProgram(ctx, argv)
		if err != nil {
			return err
		}
		program = func(sc *scenarios.Scenario) error { return runner.ClientProgramProblem(sc, argv, hello) }
	}
	m := matrix.Plan(locks, list, o.out, program)
	cells := m.Playable()
	if len(cells) == 0 {
		var why []string
		for _, c := range m.Cells {
			if c.NA != "" && !slices.Contains(why, c.NA) {
				why = append(why, c.NA)
			}
		}
		sort.Strings(why)
		return fmt.Errorf("no scenario given can be played with %s: %s", strings.Join(locks, ", "), strings.Join(why, "; "))
	}
	if err := claimMatrixDirs(o.out, cells); err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	fmt.Fprintf(stderr, "sim matrix: %d run(s) of %d scenario(s) with %d lock(s) (seed %d) into %s\n", len(cells), len(list), len(locks), o.seed, o.out)
	m.Play(ctx, reports.Play, runner.Options{Seed: o.seed, ClientCmd: strings.Fields(o.clientCmd), Host: o.backend}, func(n, total int, c *matrix.Cell) {
		if !o.quiet && !c.Interrupted {
			fmt.Fprintf(stderr, "[%d/%d] %s with %s: %s (%v)\n", n, total, c.Scenario, c.Lock, c.Text(0), c.Duration.Round(100*time.Millisecond))
		}
	})
	reports.MatrixTable(stdout, m)
	// The table so far is written whatever happens, interrupted included.
	var failed error
	if o.markdown != "" {
		if err := writeOutFile("--markdown", o.markdown, []byte(reports.MatrixMarkdown(m))); err != nil {
			warn(stderr, err)
			failed = errFailed
		}
	}
	if o.html != "" {
		var b bytes.Buffer
		err := reports.WriteMatrixHTML(&b, m, filepath.Dir(o.html))
		if err == nil {
			err = writeOutFile("--html", o.html, b.Bytes())
		} else {
			err = fmt.Errorf("--html: %v", err)
		}
		if err != nil {
			warn(stderr, err)
			failed = errFailed
		}
	}
	switch c := m.Failed(); {
	case ctx.Err() != nil:
		return interrupted("interrupted; every server and client was stopped; the runs so far are in %s", o.out)
	case failed != nil:
		return failed
	case c != nil:
		return fmt.Errorf("not every cell ran: %s with %s: %s", c.Scenario, c.Lock, c.Err)
	}
	return nil
}

// claimMatrixDirs checks, before any server starts, the matrix's
// directory, each lock's and each cell's run directory, then claims the
// matrix's and the locks' (the runner claims each cell's as it plays).
func claimMatrixDirs(out string, cells []*matrix.Cell) error {
	var locks []string
	for _, c := range cells {
		if !slices.Contains(locks, c.Lock) {
			locks = append(locks, c.Lock)
		}
	}
	err := checkOutDir(out, outdir.Matrix)
	for _, l := range locks {
		err = cmp.Or(err, checkOutDir(filepath.Join(out, l), outdir.Runs))
	}
	for _, c := range cells {
		err = cmp.Or(err, checkOutDir(c.Dir, outdir.Run))
	}
	if err != nil {
		return err
	}
	d, err := claimOut(out, outdir.Matrix, "sim matrix")
	if err != nil {
		return err
	}
	for _, l := range locks {
		if _, err := d.Sub(l, outdir.Runs, outID("sim matrix")); err != nil {
			return asFlag("--out", err)
		}
	}
	return nil
}
