package runner

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"locksim/worker"
)

// clientCmd is the program every client runs: Options.ClientCmd, else the
// scenario's client_cmd; empty: this binary as the harness's own Go worker.
func (r *run) clientCmd() []string {
	if len(r.o.ClientCmd) > 0 {
		return r.o.ClientCmd
	}
	return r.sc.ClientCmd
}

// checkClientCmd refuses, before any server starts, a client program that
// cannot be run or a story it cannot play (docs/protocol.md).
func (r *run) checkClientCmd() error {
	argv := r.clientCmd()
	if len(argv) == 0 {
		return nil
	}
	if argv[0] == "" {
		return harness("client_cmd %q: no program named", argv)
	}
	if err := r.sc.ExternalClientProblem(); err != nil {
		return harness("%v", err)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return harness("client_cmd %q: cannot run %q: %v", strings.Join(argv, " "), argv[0], err)
	}
	return nil
}

// startOptions say how to start the clients: which program, and the
// commands the story sends them, which the program's hello must list.
func (r *run) startOptions() worker.StartOptions {
	o := worker.StartOptions{Argv: r.clientCmd()}
	if r.sc.Generator != nil {
		o.Ops = append(o.Ops, worker.OpLoop)
	}
	for _, st := range r.sc.Steps {
		switch st.Do {
		case "acquire", "release", "extend", "write":
			if !slices.Contains(o.Ops, st.Do) {
				o.Ops = append(o.Ops, st.Do)
			}
		}
	}
	return o
}

// sayClientProgram tells which client program plays the clients, when it
// is not the harness's own worker.
func (r *run) sayClientProgram() {
	argv := r.clientCmd()
	if len(argv) == 0 {
		return
	}
	name := "?"
	for _, c := range r.clients {
		name = c.Hello().Name
		break
	}
	r.say("client program: %s (%s), locksim worker protocol v%d", strings.Join(argv, " "), name, worker.ProtocolVersion)
}

// startError is the error of a start in which clients failed: one line
// when they all failed alike (a client program that is no protocol v1
// client fails for each), else each error.
func startError(errs []error) error {
	var first *worker.HelloError
	var ids []int
	for _, err := range errs {
		var he *worker.HelloError
		if !errors.As(err, &he) || (first != nil && he.Msg != first.Msg) {
			return harness("starting clients: %v", errors.Join(errs...))
		}
		if first == nil {
			first = he
		}
		ids = append(ids, he.Client)
	}
	slices.Sort(ids)
	if len(ids) == 1 {
		return harness("starting clients: %v", first)
	}
	var list []string
	for _, id := range ids {
		list = append(list, fmt.Sprint(id))
	}
	return harness("starting clients: clients %s (%s): %s", strings.Join(list, ", "), first.Program, first.Msg)
}
