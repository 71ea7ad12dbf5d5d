package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
	"github.com/locksim/locksim/sweep"
)

// sweepOptions are sim sweep's flags.
type sweepOptions struct {
	name           string
	param          string
	points, trials int
	// tries is --tries: sweep.Options.Tries.
	tries         int
	locks         string
	seed          int64
	ttl, duration time.Duration
	clients       int
	out           string
	quiet         bool
	shard         string
	shards        int
	// x is the plots' x axis: planned or measured (reports.XAxis).
	x       string
	backend runner.Host
	// flags are the flags as given, to refuse one with no effect (nil:
	// none given).
	flags *pflag.FlagSet
}

func sweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep NAME --param KEY=FROM..TO [--points N] [--trials M] [--locks a,b,c]",
		Short: "violation rates of a generator scenario across a parameter: sweep.csv and plots",
		Long: `Sweep a parameter of a generator scenario (sim list gen-): at each of
--points values from FROM to TO, play --trials trials with each lock, and
write sweep.csv (one row per lock and point: trials, trials with a
violation, rate and its 95% Wilson interval, violations per 1000 critical
sections, trials with damage, damage rate and interval, writes refused by
the fence, and the counts behind the rates; a trial the machine was too
slow for is counted apart, in trials_unknown, and in no rate),
trials.csv (every trial: its seed, schedule and verdict), sweep.json
(what was swept, and the servers each lock ran on)
and damage.png/.svg and violations.png/.svg, one line per lock with its
interval as an error bar beside the other locks' and the legend outside the plot; a point where every trial was unknown has no rate
(empty in sweep.csv, "no data" in the table, an open ring in the plots).
A trial the machine was too slow for is played again with its seed, up
to --tries times in all, before it counts as unknown; it exits 1 when
more than 10% of the trials still ended unknown: rerun it on a quieter
machine. --backend docker runs the servers in containers. A
bar (on a terminal) or a line every 10 s (otherwise) shows the progress
and the time left.

To spread a sweep over N machines (a CI matrix), run it on each with the
same flags and the same --seed, adding --shard I/N (I from 1 to N): each
plays its share of every lock and point, trial for trial as the whole
sweep would, and writes its own sweep.csv and sweep.json. --shard auto
takes I from the engine: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)
or LOCKSIM_SHARD_INDEX (a CI matrix's index, given explicitly), both from
0, and N from --shards or LOCKSIM_SHARDS. Then
sim sweep merge DIR... adds up the shards' counts into one sweep.csv and
redraws the plots.`,
		Example: `  sim sweep gen-pause --param pause=0.2ttl..3ttl --points 8 --trials 15 \
    --ttl 50ms --duration 60ms --seed 1 --locks redis,redlock,postgres-session,redis+fenced
  sim sweep gen-pause --param pause=0.2ttl..3ttl --seed 1 --shard 2/4 --out shard-2   # on machine 2 of 4
  sim sweep gen-pause --param pause=0.2ttl..3ttl --seed 1 --shard auto --shards 4 --out shard-$JOB_COMPLETION_INDEX
  sim sweep merge shard-1 shard-2 shard-3 shard-4 --out sweep`,
		ValidArgsFunction: completeScenarios(func(sc *scenarios.Scenario) bool { return sc.Generator != nil }),
		Args:              usage(cobra.ExactArgs(1), "sweep: name one generator scenario, e.g. sim sweep gen-pause --param pause=0.2ttl..3ttl"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.flags = args[0], cmd.Flags()
			return cmdSweep(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	durations, rates := sweep.KeyNames()
	f.StringVar(&o.param, "param", "", "the parameter swept, `KEY=FROM..TO`: "+strings.Join(durations, ", ")+
		" (durations like 20ms..2s, or relative to the TTL like 0.2ttl..3ttl) or "+strings.Join(rates, ", ")+
		" (rates like 1..3); a fault's size alone (--param pause) sweeps its kind's range; without it, one point")
	f.IntVar(&o.points, "points", 5, "values `N` from FROM to TO")
	f.IntVar(&o.trials, "trials", 10, "trials `M` per point and lock")
	f.IntVar(&o.tries, "tries", runner.UnknownTries, "play a trial the machine was too slow for (unknown) up to `N` times in all, with its seed (1: never again)")
	f.StringVar(&o.locks, "locks", "", "locks to compare, `a,b,c` (default: the scenario's); add +fenced for a PostgreSQL fencing token and fenced storage, e.g. redis,redis+fenced,redlock,postgres-session")
	f.Int64Var(&o.seed, "seed", 0, "seed `N` of every schedule (default: the time)")
	f.DurationVar(&o.ttl, "ttl", 0, "override the scenario's TTL (`D`)")
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's trial length (`D`)")
	f.IntVar(&o.clients, "clients", 0, "override the scenario's client count (`K`)")
	f.StringVar(&o.out, "out", "", "where sweep.csv, damage.png/.svg and violations.png/.svg go (`DIR`; default runs/sweep-NAME-<time>)")
	f.StringVar(&o.shard, "shard", "", "play only shard `I/N` of the trials (needs --seed; sim sweep merge joins the shards); auto: the index from "+sharding.EnvJobIndex+" (a Kubernetes Indexed Job) or "+sharding.EnvShardIndex+", both from 0")
	f.IntVar(&o.shards, "shards", 0, "the shard count `N` of --shard auto (default: "+sharding.EnvShards+")")
	f.StringVar(&o.x, "x", string(reports.XPlanned), "the plots' x axis, `planned|measured`: the value swept, or the trials' median fault size as it struck (trials.csv's struck_ttl)")
	backendFlags(f, &o.backend)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display")
	cmd.RegisterFlagCompletionFunc("locks", completeLocks)
	cmd.AddCommand(sweepMergeCmd())
	return cmd
}

// checkX checks --x against the swept parameter key: measured needs a
// fault's size, which the trials measure.
func checkX(x, key string) error {
	switch reports.XAxis(x) {
	case reports.XPlanned:
		return nil
	case reports.XMeasured:
		if k, ok := sweep.LookupKey(key); ok && !k.Measurable() {
			return fmt.Errorf("--x measured: %s is no fault's size, so no trial measures it; sweep a fault's size (--param pause=...) or drop --x", key)
		}
		return nil
	}
	return fmt.Errorf("--x: expected planned or measured, got %q", x)
}

// checkSweep checks sim sweep's flags.
func checkSweep(o *sweepOptions) error {
	switch {
	case o.points < 1 || o.points > 1000:
		return fmt.Errorf("--points: expected 1 to 1000, got %d", o.points)
	case o.trials < 1 || o.trials > 100000:
		return fmt.Errorf("--trials: expected 1 to 100000, got %d", o.trials)
	case o.tries < 1 || o.tries > 10:
		return fmt.Errorf("--tries: expected 1 to 10, got %d", o.tries)
	case o.ttl < 0 || o.duration < 0:
		return errors.New("--ttl, --duration: expected a positive duration")
	case o.clients < 0 || o.clients > 64:
		return fmt.Errorf("--clients: expected 1 to 64, got %d", o.clients)
	}
	if err := checkBackend(o.backend); err != nil {
		return err
	}
	var err error
	if o.shard, err = resolveShard(o.shard, o.shards, os.LookupEnv); err != nil {
		return err
	}
	if o.shard != "" {
		if _, err := sharding.Parse(o.shard); err != nil {
			return input.AsFlag(err)
		}
		if o.seed == 0 {
			return errors.New("--shard needs --seed N, the same on every shard: without it each shard would draw its own schedules")
		}
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return nil
}

func cmdSweep(ctx context.Context, o sweepOptions, stdout, stderr io.Writer) error {
	if err := checkSweep(&o); err != nil {
		return err
	}
	var param *sweep.Param
	if o.param != "" {
		p, err := sweep.ParseParam(o.param)
		if err != nil {
			return input.AsFlag(err)
		}
		param = &p
	}
	key := ""
	if param != nil {
		key = param.Key
	}
	if err := checkX(o.x, key); err != nil {
		return err
	}
	sc, err := scenarios.Find(o.name)
	if err != nil {
		return err
	}
	if sc.Generator == nil {
		return fmt.Errorf("%s is a scripted story; sweep a generator scenario (sim list gen-)", sc.Name)
	}
	if err := refuseIdle(o.flags, sweepIdle(o, sc)...); err != nil {
		return err
	}
	var locks []string
	if o.locks != "" {
		locks = strings.Split(o.locks, ",")
		for _, l := range locks {
			if _, err := sweep.Variant(sc, l); err != nil {
				return input.AsFlag(err)
			}
		}
	}
	if o.out == "" {
		shard := ""
		if o.shard != "" {
			shard = strings.Replace("-shard"+o.shard, "/", "-of-", 1)
		}
		o.out = filepath.Join("runs", fmt.Sprintf("sweep-%s%s-%s", sc.Name, shard, time.Now().Format("20060102-150405")))
	}
	dir, err := claimOut(o.out, outdir.Sweep, fmt.Sprintf("sim sweep %s seed %d", sc.Name, o.seed))
	if err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	so := sweep.Options{Param: param, Points: o.points, Trials: o.trials, Tries: o.tries, Locks: locks, Seed: o.seed,
		TTL: o.ttl, Duration: o.duration, Clients: o.clients, Host: o.backend}
	if o.shard != "" {
		so.Shard, _ = sharding.Parse(o.shard) // checked by checkSweep
	}
	// Each trial without a verdict says why, as it happens: an unknown
	// that nothing explains is a bug.
	var unknowns []string
	so.Unknown = func(lock, point string, trial int, why string) {
		unknowns = append(unknowns, fmt.Sprintf("%s %s trial %d: %s", lock, point, trial, why))
	}
	if !o.quiet {
		so.Progress = sweep.NewProgress(stderr, "sweep "+sc.Name)
	}
	desc := sweep.Describe(sc, so)
	desc.Version = version()
	if so.Shard.N > 0 {
		fmt.Fprintf(stderr, "sim sweep %s (seed %d), shard %s\n", sc.Name, o.seed, so.Shard)
	} else {
		fmt.Fprintf(stderr, "sim sweep %s (seed %d)\n", sc.Name, o.seed)
	}
	for _, s := range desc.Servers {
		fmt.Fprintf(stderr, "  %s\n", s)
	}
	started := time.Now()
	rows, err := sweep.Run(ctx, sc, so)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted("interrupted; every server and client was stopped")
		}
		return input.AsFlag(err)
	}
	if err := reports.WriteSweep(dir, sc.Name, rows, reports.XAxis(o.x)); err != nil {
		return err
	}
	if err := sweep.WriteDescription(dir, desc); err != nil {
		return err
	}
	reports.SweepTable(stdout, rows)
	for _, u := range unknowns {
		fmt.Fprintf(stderr, "  no verdict: %s\n", u)
	}
	if n := sweep.PlayedAgain(rows); n > 0 {
		fmt.Fprintf(stderr, "  %d trial(s) played again: the machine was too slow for their first try (trials.csv's tries)\n", n)
	}
	_, trials, _ := sweep.Undecided(rows)
	fmt.Fprintf(stdout, "%d trials in %v; %s\n", trials, time.Since(started).Round(time.Millisecond),
		filepath.Join(o.out, "sweep.csv"))
	return undecided(rows)
}

// undecided is a sweep's verdict: exit 1, saying why, when more than
// sweep.MaxUnknown of its trials ended unknown, for then its rates rest
// on the trials the machine happened to play on time.
func undecided(rows []sweep.Row) error {
	unknown, trials, tooMany := sweep.Undecided(rows)
	if !tooMany {
		return nil
	}
	return &exitError{code: exitMismatch, err: fmt.Errorf("%d of %d trials ended unknown (more than %.0f%%): the machine was too slow for them, so the rates rest on the rest; run the sweep again on a quieter machine",
		unknown, trials, 100*sweep.MaxUnknown)}
}
