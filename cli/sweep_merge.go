package cli

// sweep_merge.go: sim sweep merge, which joins the shards of a sweep
// played on several machines (sim sweep --shard I/N).

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/sweep"
)

func sweepMergeCmd() *cobra.Command {
	var out, x string
	cmd := &cobra.Command{
		Use:   "merge DIR... [--out DIR]",
		Short: "join the shards of a sweep (sim sweep --shard I/N): one sweep.csv and the plots",
		Long: `Join the directories of the N shards of one sweep (sim sweep NAME --seed S
--shard I/N, for I from 1 to N, each with the same flags): check that they
are one sweep (same scenario, seed, parameter, points, trials, locks,
overrides and backend, each shard once, each trial in one shard's
trials.csv), add up their counts per lock and point, and write sweep.csv,
trials.csv, sweep.json, damage.png/.svg and violations.png/.svg as the
whole sweep would have. Rates and intervals are
computed from the summed counts.`,
		Example: `  sim sweep merge shard-1 shard-2 shard-3 shard-4 --out sweep`,
		Args:    usage(cobra.MinimumNArgs(1), "sweep merge: name the shards' directories, e.g. sim sweep merge shard-1 shard-2"),
		RunE:    func(cmd *cobra.Command, args []string) error { return cmdSweepMerge(args, out, x, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&out, "out", "", "where the merged sweep goes (`DIR`; default runs/sweep-merge-<time>)")
	cmd.Flags().StringVar(&x, "x", string(reports.XPlanned), "the plots' x axis, `planned|measured` (as sim sweep's)")
	return cmd
}

func cmdSweepMerge(dirs []string, out, x string, stdout io.Writer) error {
	if out == "" {
		out = filepath.Join("runs", "sweep-merge-"+time.Now().Format("20060102-150405"))
	}
	if err := checkOutDir(out, outdir.Sweep); err != nil {
		return err
	}
	var shards []sweep.ShardResult
	for _, dir := range dirs {
		s, err := sweep.ReadShard(dir)
		if err != nil {
			return err
		}
		shards = append(shards, s)
	}
	desc, rows, err := sweep.Merge(shards)
	if err != nil {
		return err
	}
	desc.Version = version()
	if len(rows) > 0 {
		if err := checkX(x, rows[0].Param); err != nil {
			return err
		}
	}
	dir, err := claimOut(out, outdir.Sweep, "sim sweep merge "+desc.Scenario)
	if err != nil {
		return err
	}
	if err := reports.WriteSweep(dir, desc.Scenario, rows, reports.XAxis(x)); err != nil {
		return err
	}
	if err := sweep.WriteDescription(dir, desc); err != nil {
		return err
	}
	reports.SweepTable(stdout, rows)
	_, trials, _ := sweep.Undecided(rows)
	fmt.Fprintf(stdout, "%d trials from %d shards; %s\n", trials, len(shards), filepath.Join(out, "sweep.csv"))
	return undecided(rows)
}
