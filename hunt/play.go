package hunt

import (
	"context"
	"fmt"

	"path/filepath"

	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/runner"
)

// OnServers plays each story with the runner on real servers, each run
// in a directory of its own under dir, removed once it is read: only the
// final story's run is kept, by the caller replaying it (sim hunt does,
// with its counterfactual and reports). base gives the runner's other
// options (the backend, the seed). The servers are kept from one story
// to the next and put back between them (runner.Kept): close stops them.
func OnServers(dir string, base runner.Options) (play Player, close func()) {
	n := 0
	keep := runner.NewKept()
	return func(ctx context.Context, s *Story) (Played, error) {
		n++
		o := base
		o.Out = filepath.Join(dir, fmt.Sprintf("run-%04d", n))
		o.Counterfactual = false
		o.Keep = keep
		defer outdir.RemoveAll(o.Out)
		reused := keep.Reused
		out, err := runner.Run(ctx, s.Scenario, o)
		if err != nil {
			return Played{}, err
		}
		return Played{Verdict: out.Check.Verdict, Summary: out.Check.Summary, Events: out.Events, Reused: keep.Reused > reused}, nil
	}, keep.Close
}
