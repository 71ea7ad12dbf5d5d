package cli

// cost.go: `sim cost`, what each lock costs on this machine, beside the
// faults it survives. The measuring is package cost's; the drawing,
// package reports'.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/cost"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
)

// costOptions are sim cost's flags.
type costOptions struct {
	locks    string
	duration time.Duration
	out      string
	matrix   string
	x        string
	quiet    bool
}

func costCmd() *cobra.Command {
	var o costOptions
	cmd := &cobra.Command{
		Use:   "cost [--locks a,b,c] [--duration D] [--matrix DIR]",
		Short: "what each lock costs on this machine, beside the faults it survives: cost.csv, cost.json, cost.png",
		Long: `Measure, on real servers on 127.0.0.1 started for the purpose, one lock
option after another (` + strings.Join(cost.DefaultLocks, ", ") + ` by default;
Redlock on 5 nodes with persistence none, everysec and always; a PostgreSQL
lock direct and through pgbouncer):
  - one acquire and release with one client, p50 and p99;
  - locks per second with 4 clients contending for one lock, and for a lock
    each (a refused client waits a random time up to the lock's own p50);
  - one critical section (acquire, read and write the protected counter in
    PostgreSQL, release) with each defence, interleaved so that they meet
    the same machine: none, fenced (the lock's own token, or one from a
    PostgreSQL sequence), token-cas, a lease check before the write; and for
    a lock with a TTL, one watchdog renewal (its Extend), paid every TTL/3
    while a lock is held;
  - the floors, in the same run: one Redis PING and one PostgreSQL SELECT 1,
    an etcd Get, a ZooKeeper exists and a memcached mn when those locks are
    measured. Every lock is also given as a multiple of its floor, timed
    again turn about with its acquire and release on its own servers: the
    figures are this machine's, the multiples travel better.
Each point runs for --duration after a short warm-up; clients dial the
servers directly, with no proxy. Writes cost.csv, cost.json and cost.png
into --out, and prints the table.

cost.png puts price against safety: x is each option's critical section
with a defence (its p99; --x rate: the locks per second on one contended
lock), y the faults that cause the catalogue's stories, and a mark the
verdict of each story at the option and defence it was told with (the
worst when several share a place). By default the verdicts are the
catalogue's own, each story with its own lock at the verdict it expects
(TestCatalogue holds every story to it); --matrix DIR takes them from the
runs of a sim matrix directory instead, so that locks no story is told
with (redsync) get marks too. A story told with what sim cost does not
measure (a fence counted by Redis INCR, an idempotency key, two defences
at once) has no mark. docs/cost.md says how to read it.

Exit codes: 0 every point measured, 2 bad input or a point that could not
be measured (the others are still written), 130 interrupted (every server
stopped; nothing written).`,
		Example: `  sim cost
  sim cost --locks redis,postgres-session --duration 1s --out runs/cost
  sim matrix --locks redis,redlock,redsync --out runs/m && sim cost --matrix runs/m`,
		Args: usage(cobra.NoArgs, "cost: takes no arguments; name the locks with --locks a,b"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdCost(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.locks, "locks", "", "the locks to measure, `a,b,c` (sim locks), each with its options (default "+strings.Join(cost.DefaultLocks, ",")+")")
	f.DurationVar(&o.duration, "duration", 2*time.Second, "how long each point runs (`D`, 50ms to 5m), after a warm-up of a tenth of it (at most 200ms)")
	f.StringVar(&o.out, "out", "", "where cost.csv, cost.json and cost.png go (`DIR`; default runs/cost-<time>)")
	f.StringVar(&o.matrix, "matrix", "", "take the chart's verdicts from the runs of a sim matrix `DIR` (default: the catalogue's expected verdicts)")
	f.StringVar(&o.x, "x", string(reports.CostP99), "the chart's x axis, `p99|rate`: a critical section's p99, or the locks per second on one contended lock")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	cmd.RegisterFlagCompletionFunc("locks", completeLocks)
	return cmd
}

func cmdCost(ctx context.Context, o costOptions, stdout, stderr io.Writer) error {
	locks, err := cost.ParseLocks(o.locks)
	if err != nil {
		return input.AsFlag(err)
	}
	if o.duration < 50*time.Millisecond || o.duration > 5*time.Minute {
		return fmt.Errorf("--duration: expected 50ms to 5m, got %v", o.duration)
	}
	x, err := reports.CostXAxis(o.x)
	if err != nil {
		return fmt.Errorf("--x: %v", err)
	}
	opts, err := cost.OptionsOf(locks)
	if err != nil {
		return input.AsFlag(err)
	}
	verdicts, marks := cost.FromCatalogue, []cost.Mark(nil)
	if o.matrix != "" {
		verdicts = fmt.Sprintf(cost.FromMatrix, o.matrix)
		marks, err = cost.MatrixMarks(opts, o.matrix)
	} else {
		marks, err = cost.CatalogueMarks(opts)
	}
	if err != nil {
		return input.AsFlag(err)
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "cost-"+time.Now().Format("20060102-150405"))
	}
	if err := checkOutDir(o.out, outdir.Cost); err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	total := cost.Points(opts)
	fmt.Fprintf(stderr, "sim cost: %d option(s) of %s, %d points of %v each (about %v) into %s\n",
		len(opts), strings.Join(locks, ", "), total, o.duration, estimate(total, o.duration).Round(time.Second), o.out)
	co := cost.Options{Locks: locks, Duration: o.duration}
	var bar *progress
	if !o.quiet {
		bar = newProgress(stderr, total)
		co.Progress = func(done, _ int, what string) {
			bar.n = done - 1
			bar.step(what)
		}
	}
	// The machine's load before the run: during it, its own servers and
	// contending clients keep every core busy by design.
	before, _ := loadAverage()
	res, err := cost.Run(ctx, co)
	if res != nil {
		res.Load = before
	}
	if bar != nil {
		bar.done()
	}
	if ctx.Err() != nil {
		return interrupted("interrupted; every server was stopped; nothing written")
	}
	if err != nil {
		return err
	}
	res.Command = "sim cost " + costArgs(o)
	res.Version = version()
	res.Verdicts, res.Marks = verdicts, marks
	d, err := claimOut(o.out, outdir.Cost, "sim cost")
	if err != nil {
		return err
	}
	if err := reports.WriteCost(d, res, x); err != nil {
		return err
	}
	reports.CostTable(stdout, res)
	fmt.Fprintf(stdout, "measured in %.0fs on %d core(s), at load %.1f before it began; %s\n", res.Took, res.Cores, res.Load, filepath.Join(o.out, "cost.csv"))
	if err := res.Failed(); err != nil {
		return errors.Join(errors.New("not every point was measured"), err)
	}
	return nil
}

// estimate is how long total points of d take: each its warm-up and d,
// and about a second a point for the servers' starts and stops.
func estimate(total int, d time.Duration) time.Duration {
	return time.Duration(total) * (d + min(d/10, 200*time.Millisecond) + 300*time.Millisecond)
}

// costArgs are the flags a run was given, for cost.json's command.
func costArgs(o costOptions) string {
	var a []string
	if o.locks != "" {
		a = append(a, "--locks "+o.locks)
	}
	a = append(a, "--duration "+o.duration.String())
	if o.matrix != "" {
		a = append(a, "--matrix "+o.matrix)
	}
	if o.x != string(reports.CostP99) {
		a = append(a, "--x "+o.x)
	}
	return strings.Join(a, " ")
}
