package cli

// findings_jobs.go: sim findings --jobs N, which plays the locks in N
// processes at once on this machine (each a shard of the run, as on N
// machines) and merges their pages, as sim findings merge does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locksim/locksim/outdir"
	"github.com/spf13/pflag"
)

// jobsWait is how long a shard process has to stop, its servers and temp
// dirs with it, once interrupted, before it is killed.
const jobsWait = 30 * time.Second

// cmdFindingsJobs plays o's run as o.jobs shards, each sim findings
// --shard I/N in a process of its own with its page and runs in
// OUT/shard-I, and merges their pages into o.doc. A shard that exits 2
// (written, a cell the harness could not run) is merged, and the run
// then exits 2 saying so; any other failure writes nothing.
func cmdFindingsJobs(ctx context.Context, o findingsOptions, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := o.claimRuns()
	if err != nil {
		return err
	}
	// The shards split the locks by the rows' times on --doc's page, when
	// it has them: one shard of every Nth lock ended 5 minutes after the
	// other (2026-12-06).
	balance := ""
	if page := strings.TrimSuffix(o.doc, ".md") + ".json"; o.balance == "" {
		if _, err := rowTimes(page); err == nil {
			balance = page
		}
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	pages := make([]string, o.jobs) // each shard's findings.md
	jsons := make([]string, o.jobs) // and its findings.json
	errs := make([]error, o.jobs)
	var wg sync.WaitGroup
	started := time.Now()
	cmds := make([]*exec.Cmd, o.jobs)
	for i := range o.jobs { // every shard's folder and log before any starts
		shard := fmt.Sprintf("%d/%d", i+1, o.jobs)
		sub, err := dir.Sub(fmt.Sprintf("shard-%d", i+1), outdir.Runs, outID("sim findings --shard "+shard))
		if err != nil {
			return asFlag("--out", err)
		}
		log, err := sub.Create("log")
		if err != nil {
			return err
		}
		defer log.Close()
		pages[i], jsons[i] = filepath.Join(sub.Path(), "findings.md"), filepath.Join(sub.Path(), "findings.json")
		args := append([]string{"findings", "--shard", shard, "--doc", pages[i], "--out", filepath.Join(sub.Path(), "runs")}, o.passed()...)
		if balance != "" {
			args = append(args, "--balance="+balance)
		}
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Stdout, cmd.Stderr = log, log
		// It dies with the harness, however the harness ends; told to
		// stop, it stops its servers first.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = jobsWait
		cmds[i] = cmd
	}
	fmt.Fprintf(stderr, "sim findings: %d shard processes at once, each into %s/shard-I (its progress in shard-I/log)\n", o.jobs, o.out)
	var startErr error
	for i, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			startErr = fmt.Errorf("shard %d/%d would not start: %w; nothing written to %s", i+1, o.jobs, err, o.doc)
			stop() // the shards started stop too
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Wait()
			fmt.Fprintf(stderr, "sim findings: shard %d/%d %s after %s\n", i+1, o.jobs, exitWord(errs[i]), time.Since(started).Round(time.Second))
		}()
	}
	wg.Wait()
	if startErr != nil {
		return startErr
	}
	if ctx.Err() != nil {
		return interrupted("interrupted; nothing written to %s; the runs so far are in %s", o.doc, o.out)
	}
	var partial []string
	for i, err := range errs {
		var x *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &x) && x.ExitCode() == exitHarness && exists(jsons[i]):
			partial = append(partial, fmt.Sprintf("shard %d/%d", i+1, o.jobs))
		default:
			return fmt.Errorf("shard %d/%d: %v; nothing written to %s (its log: %s)", i+1, o.jobs, err, o.doc, filepath.Join(filepath.Dir(pages[i]), "log"))
		}
	}
	if err := cmdFindingsMerge(jsons, o.doc, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sim findings: %d shards in %s\n", o.jobs, time.Since(started).Round(time.Second))
	if len(partial) > 0 {
		return fmt.Errorf("written, but the harness could not run some cell(s) of %s (each cell says why; their logs: %s/shard-I/log)", strings.Join(partial, ", "), o.out)
	}
	return nil
}

// exists says whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// shardOwn are the flags a --jobs run sets for each shard itself.
var shardOwn = map[string]bool{"jobs": true, "shard": true, "shards": true, "doc": true, "out": true}

// passed are the flags of o a shard of its run is given as they were:
// every flag the user set but the shard's own, so that a flag added to
// sim findings reaches the shards without a list to keep.
func (o findingsOptions) passed() []string {
	var args []string
	o.flags.Visit(func(f *pflag.Flag) {
		if shardOwn[f.Name] {
			return
		}
		v := f.Value.String()
		if s, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(s.GetSlice(), ",")
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return args
}

// exitWord says how a shard process ended.
func exitWord(err error) string {
	var x *exec.ExitError
	switch {
	case err == nil:
		return "done"
	case errors.As(err, &x) && x.ExitCode() >= 0:
		return fmt.Sprintf("ended with exit code %d", x.ExitCode())
	default:
		return "ended: " + err.Error()
	}
}
