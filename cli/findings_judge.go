package cli

// findings_judge.go: sim findings judge, which judges the findings page
// again, playing nothing: each lock's promises as it declares them now,
// each story's property and each fault's realistic size as this locksim
// has them.

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
)

func findingsJudgeCmd() *cobra.Command {
	var doc, examples string
	cmd := &cobra.Command{
		Use:   "judge [--doc FILE] [--examples DIR]",
		Short: "judge the findings page again under today's promises and fault sizes, playing nothing",
		Long: `Read FILE's .json (default docs/findings.md) and judge every cell and hunt
on it again, as sim findings does after playing: a finding counts only
where the lock promises the property its story tests (each registered
lock's promises as this binary has them, each client program's as its
hello under DIR says them now), and not where the story's fault is
outside what real machines have; then group what counts into defects and
write FILE, its .html and .json. Nothing is played: the cells are the
runs the page already has. A program whose hello cannot be read keeps the
promises the page last had for it, and is named.`,
		Example: `  sim findings judge                     # after a library's promises or a story's property changed`,
		Args:    usage(cobra.NoArgs, "findings judge: takes no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdFindingsJudge(cmd, doc, examples, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&doc, "doc", filepath.Join("docs", "findings.md"), "the Markdown page to judge again (`FILE`; FILE's .html and .json beside it)")
	cmd.Flags().StringVar(&examples, "examples", "examples", "the folder whose client programs' hellos say their promises (`DIR`)")
	return cmd
}

func cmdFindingsJudge(cmd *cobra.Command, doc, examples string, stdout, stderr io.Writer) error {
	base, report, err := playedPage(doc)
	if err != nil {
		return err
	}
	if examples != "" {
		all, err := subjects(cmd.Context(), examples)
		if err != nil {
			return err
		}
		for i := range report.Subjects {
			s := &report.Subjects[i]
			if s.Program == nil {
				continue
			}
			for _, o := range all {
				if o.Name != s.Name || o.Program == nil {
					continue
				}
				if o.err != nil {
					fmt.Fprintf(stderr, "sim findings judge: %s keeps the promises the page had: %s\n", s.Name, mendHint(o.Program, o.err))
					continue
				}
				s.Promises, s.Patched = o.Promises, o.Patched
			}
		}
	}
	return writeFindings(report, doc, base, stdout)
}
