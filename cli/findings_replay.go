package cli

// findings_replay.go: sim findings replay, which plays the story that
// shows each defect n times with its library, each run judged against
// its reference, and puts the k of n on the page and in the defect's
// report.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/scenarios"
)

func findingsReplayCmd() *cobra.Command {
	var doc, out string
	var repeat int
	cmd := &cobra.Command{
		Use:   "replay [SLUG...] [--repeat N] [--doc FILE]",
		Short: "play each defect's story N times beside its reference and put its k of n on the page",
		Long: `Play the story that shows each defect the page lists (SLUG: its report's
name, docs/findings/SLUG.md; none: every defect) N times with its
library, each run judged against its reference on the same story, then
once with the story's counterfactual; then write FILE, its .html and
.json and the defects' reports again, each defect's line saying k of n:
the runs that ended worse than the reference, and the runs in which the
reference itself ended unsafe, leaked or hung. The story is the defect's first
cell (a told story), else its hunt's shrunk story, written to
docs/findings/stories/SLUG.yaml so that the replay command works from a
clone. Play it on an idle machine: the page says the load it saw.`,
		Example: `  sim findings replay                          # every defect, 5 runs each
  sim findings replay redis-lock-token-release --repeat 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdFindingsReplay(cmd.Context(), doc, out, repeat, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&doc, "doc", filepath.Join("docs", "findings.md"), "the findings page whose defects are played (`FILE`; FILE's .html and .json beside it)")
	cmd.Flags().StringVar(&out, "out", "", "where the runs go (`DIR`; default runs/replay-<time>)")
	cmd.Flags().IntVar(&repeat, "repeat", findings.DefaultReplays, "how many times each defect's story is played (`N`)")
	return cmd
}

func cmdFindingsReplay(ctx context.Context, doc, out string, repeat int, slugs []string, stdout, stderr io.Writer) error {
	if repeat < 1 {
		return fmt.Errorf("--repeat %d: expected 1 or more", repeat)
	}
	base, report, err := playedPage(doc)
	if err != nil {
		return err
	}
	judge(report)
	all := report.DefectList()
	var known []string
	for _, d := range all {
		known = append(known, d.Slug())
	}
	defects := all
	if len(slugs) > 0 {
		defects = nil
		for _, s := range slugs {
			i := slices.Index(known, s)
			if i < 0 {
				return fmt.Errorf("%s: the page %s lists no such defect (expected one of: %s)", s, doc, strings.Join(known, ", "))
			}
			defects = append(defects, all[i])
		}
	}
	if len(defects) == 0 {
		return fmt.Errorf("--doc %s: the page lists no defect to replay", doc)
	}
	if out == "" {
		out = filepath.Join("runs", "replay-"+time.Now().Format("20060102-150405"))
	}
	dir, err := claimOut(out, outdir.Runs, outID("sim findings replay"))
	if err != nil {
		return err
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	for n, d := range defects {
		sh := d.Replayed()
		i := slices.IndexFunc(report.Subjects, func(s findings.Subject) bool { return s.Name == sh.Subject })
		if i < 0 {
			return fmt.Errorf("%s: its row %s is not on the page", d.Slug(), sh.Subject)
		}
		sub := report.Subjects[i]
		target, err := replayTarget(sub, sh, filepath.Join(filepath.Dir(doc), "findings", "stories", d.Slug()+".yaml"))
		if err != nil {
			return fmt.Errorf("%s: %v", d.Slug(), err)
		}
		fmt.Fprintf(stderr, "sim findings replay: %s (%d of %d): %s, %d run(s)\n", d.Slug(), n+1, len(defects), target, repeat)
		load := watchLoad()
		is, err := playIssue(ctx, sub, target, filepath.Join(dir.Path(), d.Slug()), repeat)
		peak := load.stop()
		if ctx.Err() != nil {
			return interrupted("interrupted; nothing written to %s; the runs so far are in %s", doc, dir.Path())
		}
		if err != nil {
			return fmt.Errorf("%s: %v", d.Slug(), err)
		}
		report.SetReplay(findings.Replay{Slug: d.Slug(), Command: is.Command, N: is.N, K: is.K, RefLock: is.RefLock, RefK: is.RefK,
			Undecided: is.Undecided, Counterfactual: is.Counterfactual, Date: time.Now().Format("2006-01-02"), Load: peak, Cores: runtime.NumCPU()})
		fmt.Fprintf(stderr, "sim findings replay: %s: %d of %d worse than the reference; the reference %s unsafe, leaked or hung in %d\n", d.Slug(), is.K, is.N, is.RefLock, is.RefK)
	}
	if err := writeFindings(report, doc, base, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "written: %s; the runs are in %s\n", doc, dir.Path())
	return nil
}

// replayTarget is what sim run plays for shown: a cell's catalogue
// story by name, or its program's story file; a hunt's shrunk story,
// written to file.
func replayTarget(sub findings.Subject, sh findings.Shown, file string) (string, error) {
	if sh.StoryName == "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return "", err
		}
		return file, os.WriteFile(file, []byte(sh.Story), 0o644)
	}
	if _, err := scenarios.Find(sh.StoryName); err == nil {
		return sh.StoryName, nil
	}
	stories, err := programStories(sub.Program)
	if err != nil {
		return "", err
	}
	for _, sc := range stories {
		if sc.Name == sh.StoryName {
			return sc.File, nil
		}
	}
	return "", fmt.Errorf("its story %s is neither in the catalogue nor beside its program", sh.StoryName)
}
