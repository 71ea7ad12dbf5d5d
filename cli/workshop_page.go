package cli

// workshop_page.go: `sim workshop`, which serves the workshop's page
// (package web): the debate, and each story run live from it.

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/web"
)

// workshopOptions are sim workshop's flags.
type workshopOptions struct {
	// listen is the address to serve (host:port).
	listen string
	// allowRemote allows a listen address that is not loopback.
	allowRemote bool
	// out is the parent of the run directories.
	out string
	// backend says where the servers run.
	backend runner.Host
}

func workshopCmd() *cobra.Command {
	var o workshopOptions
	cmd := &cobra.Command{
		Use:   "workshop",
		Short: "serve the workshop's page: the Redlock debate, each story run live from it",
		Long: `Serve a local web page for a workshop on the Redlock debate: the debate's
claims with their quotations and the stories that show them, and a page for
each story with Run, Step, Counterfactual and Stop, its timeline drawn live
as the events are recorded (the same drawing as report.html's). It prints
its address and opens nothing; Ctrl-C stops it and any run.

It listens on loopback only unless --allow-remote, refuses requests whose
Host or Origin is not its address, starts only catalogue stories by name,
and plays one run at a time. Each run goes to DIR/NAME-TIME, served
read-only under /runs/. docs/workshop.md says how to use it before a room.`,
		Example: `  sim workshop
  sim workshop --listen 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdWorkshop(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.listen, "listen", "127.0.0.1:7070", "serve on `HOST:PORT` (loopback only, unless --allow-remote)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a --listen address that is not loopback: anyone who can reach it can start runs on this machine")
	f.StringVar(&o.out, "out", "runs", "put each run directory in `DIR` (DIR/NAME-TIME)")
	backendFlags(f, &o.backend)
	return cmd
}

func cmdWorkshop(ctx context.Context, o workshopOptions, stdout, stderr io.Writer) error {
	if err := checkBackend(o.backend); err != nil {
		return err
	}
	warning, err := web.CheckListen(o.listen, o.allowRemote)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintf(stderr, "sim workshop: warning: %s\n", warning)
	}
	s, err := web.New(web.Config{Out: o.out, Play: reports.Play, Host: o.backend, Log: stderr})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %v", err)
	}
	ctx, stop := untilStopped(ctx)
	defer stop()
	fmt.Fprintf(stdout, "http://%s/\n", ln.Addr())
	fmt.Fprintf(stderr, "sim workshop: serving the workshop page at http://%s/ (Ctrl-C stops it and any run)\n", ln.Addr())
	if err := s.Serve(ctx, ln); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "sim workshop: stopped; every server and client of its runs was stopped")
	}
	return nil
}
