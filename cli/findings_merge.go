package cli

// findings_merge.go: sim findings merge, which joins the pages of a sim
// findings played on several machines (sim findings --shard I/N).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/findings"
)

func findingsMergeCmd() *cobra.Command {
	var doc string
	cmd := &cobra.Command{
		Use:   "merge FILE.json... [--doc FILE]",
		Short: "join the pages of a sharded sim findings (--shard I/N) into docs/findings.md",
		Long: `Join the findings.json of the N shards of one sim findings run (sim
findings --shard I/N --doc shard-I/findings.md, for I from 1 to N, each
with the same flags): check that they are one run (the same command and
seed, each shard once, no lock in two), then put their locks into FILE
(default docs/findings.md) as sim findings --only does, keeping the
others FILE's .json has, and write FILE, its .html and .json.`,
		Example: `  sim findings merge shard-*/findings.json --doc docs/findings.md`,
		Args:    usage(cobra.MinimumNArgs(1), "findings merge: name the shards' findings.json files, e.g. sim findings merge shard-1/findings.json shard-2/findings.json"),
		RunE:    func(cmd *cobra.Command, args []string) error { return cmdFindingsMerge(args, doc, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&doc, "doc", filepath.Join("docs", "findings.md"), "the Markdown page to write (`FILE`; FILE's .html and .json beside it)")
	return cmd
}

func cmdFindingsMerge(paths []string, doc string, stdout io.Writer) error {
	base, err := pageBase(doc)
	if err != nil {
		return err
	}
	var shards []*findings.Report
	for _, p := range paths {
		if filepath.Clean(p) == filepath.Clean(base+".json") {
			return fmt.Errorf("%s: the page merge writes (--doc %s) is not a shard", p, doc)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s: no such file (name the findings.json files sim findings --shard wrote)", p)
		}
		r, err := findings.Load(p)
		if err != nil {
			return err
		}
		shards = append(shards, r)
	}
	merged, err := findings.Merge(shards, paths)
	if err != nil {
		return err
	}
	report, err := findings.Load(base + ".json")
	if err != nil {
		return asFlag("--doc", err)
	}
	report.Replace(merged.Subjects)
	report.Command, report.Seed, report.Modules, report.Machine, report.Shard = merged.Command, merged.Seed, merged.Modules, merged.Machine, ""
	fmt.Fprintf(stdout, "%d lock(s) from %d shard(s)\n", len(merged.Subjects), len(shards))
	return writeFindings(report, doc, base, stdout)
}
