package cli

// findings_cost.go: sim findings cost DIR, which puts a sim cost run's
// figures on the findings page (each lock's cost line) without playing
// anything again: it renders the page from its .json and DIR/cost.json.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/cost"
)

func findingsCostCmd() *cobra.Command {
	var doc string
	cmd := &cobra.Command{
		Use:   "cost DIR [--doc FILE]",
		Short: "put a sim cost run's figures on the findings page (each lock's cost line), playing nothing again",
		Long: `Read DIR/cost.json (what sim cost --out DIR wrote; DIR may name the file
itself) and give each lock of the findings page FILE (default
docs/findings.md) its cost line: its acquire and release, p50 and p99,
as a multiple of the floor measured in the same run, and its locks per
second on one contended lock, with the run's command and date. A lock
the run did not measure, and every client program (sim cost times
locksim's own Go locks), says "not measured". The figures are kept in
FILE's .json, so that later sim findings runs render them again; FILE,
its .html and .json are written from FILE's .json and the run alone.`,
		Example: `  sim cost --out runs/cost && sim findings cost runs/cost`,
		Args:    usage(cobra.ExactArgs(1), "findings cost: name the directory sim cost --out wrote, e.g. sim findings cost runs/cost"),
		RunE:    func(cmd *cobra.Command, args []string) error { return cmdFindingsCost(args[0], doc, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&doc, "doc", filepath.Join("docs", "findings.md"), "the Markdown page to write (`FILE`; FILE's .html and .json beside it)")
	return cmd
}

func cmdFindingsCost(dir, doc string, stdout io.Writer) error {
	base, report, err := playedPage(doc)
	if err != nil {
		return err
	}
	res, err := readCost(dir)
	if err != nil {
		return err
	}
	report.SetCost(res)
	fmt.Fprintf(stdout, "cost figures from %s\n", strings.ReplaceAll(report.CostSource(), "`", ""))
	return writeFindings(report, doc, base, stdout)
}

// readCost reads the cost.json of a sim cost run: DIR/cost.json, or the
// file DIR names.
func readCost(dir string) (*cost.Result, error) {
	path := dir
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		path = filepath.Join(dir, "cost.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (name the directory sim cost --out wrote)", path, err)
	}
	var res cost.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: not a cost.json sim cost wrote: %v", path, err)
	}
	if res.Started.IsZero() || len(res.Rows) == 0 {
		return nil, fmt.Errorf("%s: not a cost.json sim cost wrote: expected \"started\" and \"rows\"", path)
	}
	return &res, nil
}
