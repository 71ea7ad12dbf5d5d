package cli

// clean.go: sim clean, which removes what killed runs left behind.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/env"
)

func cleanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "remove what runs killed with kill -9 left behind (temp dirs, SysV segments, containers)",
		Long: `Remove, and list, what runs killed before they could clean up left
behind: temp dirs whose owner process is gone, and their PostgreSQL's SysV
shared memory, and the docker backend's containers whose harness is gone
(when a Docker engine answers). Run directories are never touched. Every
start of sim (but help, version and completion) does the same for temp dirs
and segments; a run on the docker backend, for containers.`,
		Args:              usage(cobra.NoArgs, "usage: sim clean"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmdClean(cmd.OutOrStdout()) },
	}
}

// cmdClean removes, and lists, what runs killed before they could clean
// up left behind: temp dirs whose owner process is gone, their
// PostgreSQL's SysV shared memory, and (when a Docker engine answers) the
// docker backend's containers of harnesses that are gone. Run directories
// are never touched.
func cmdClean(stdout io.Writer) error {
	// The docker backend's containers first, when an engine answers: a
	// server in one works in its temp dir (an etcd or ZooKeeper member's
	// JVM or binary has its cwd there), and Reap leaves a dir a live
	// process works in.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	names, cerr := env.ReapContainers(ctx)
	for _, n := range names {
		fmt.Fprintf(stdout, "removed container %s\n", n)
	}
	if len(names) > 0 {
		fmt.Fprintf(stdout, "removed %d container(s) left by runs that were killed\n", len(names))
	}
	r, err := env.Reap(env.ReapRoots()...)
	for _, d := range r.Dirs {
		fmt.Fprintf(stdout, "removed %s\n", d)
	}
	for _, id := range r.Segments {
		fmt.Fprintf(stdout, "removed SysV shared memory segment %d\n", id)
	}
	fmt.Fprintln(stdout, reapedLine(r, nil))
	if cerr != nil && !errors.Is(cerr, env.ErrNoDocker) {
		err = errors.Join(err, cerr)
	}
	return err
}

// reapedLine says in one line what Reap removed.
func reapedLine(r env.Reaped, err error) string {
	s := "nothing left behind by earlier runs"
	if !r.Empty() {
		s = fmt.Sprintf("removed %d temp dir(s) (%.1f MB) and %d SysV segment(s) left by runs that were killed", len(r.Dirs), float64(r.Bytes)/1e6, len(r.Segments))
	}
	if err != nil {
		s += fmt.Sprintf("; could not remove everything: %v", err)
	}
	return s
}
