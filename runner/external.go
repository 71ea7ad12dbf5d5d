package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
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
// cannot be run, one that does not open the protocol with a hello line
// this harness speaks, or a story its hello does not cover, with the
// file, line and field that ask for it (docs/protocol.md). It starts the
// program once to read its hello (worker.Probe).
func (r *run) checkClientCmd(ctx context.Context) error {
	argv := r.clientCmd()
	if len(argv) == 0 {
		return nil
	}
	h, err := ProbeClientProgram(ctx, argv)
	if err != nil {
		return err
	}
	r.programLock = h.OwnName(r.sc.Lock)
	return ClientProgramProblem(r.sc, argv, h)
}

// ProbeClientProgram reads client program argv's hello line
// (worker.Probe): a harness error when the program cannot be run or
// opens with no hello this harness speaks.
func ProbeClientProgram(ctx context.Context, argv []string) (protocol.Hello, error) {
	if len(argv) == 0 || argv[0] == "" {
		return protocol.Hello{}, harness("client_cmd %q: no program named", argv)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return protocol.Hello{}, harness("client_cmd %q: cannot run %q: %v", strings.Join(argv, " "), argv[0], err)
	}
	h, err := worker.Probe(ctx, argv)
	if err != nil {
		return protocol.Hello{}, harness("%v", err)
	}
	return h, nil
}

// ClientProgramOf is what program argv, whose hello is h, covers, as the
// scenarios see it.
func ClientProgramOf(argv []string, h protocol.Hello) scenarios.ClientProgram {
	return scenarios.ClientProgram{Program: strings.Join(argv, " "), Protocol: h.Protocol, Locks: h.Locks, Ops: h.Ops,
		StorageModes: h.StorageModes, Fences: h.Fences, Watchdogs: h.Watchdogs, CheckLease: h.CheckLease, ClientClock: h.ClientClock,
		AcquireWait: h.AcquireWait}
}

// ClientProgramProblem says, as a harness error naming the scenario's
// file, line and field, why clients that are program argv, whose hello is
// h, cannot play sc; nil when they can.
func ClientProgramProblem(sc *scenarios.Scenario, argv []string, h protocol.Hello) error {
	p := ClientProgramOf(argv, h)
	if err := sc.ClientProgramProblem(&p); err != nil {
		return harness("%v", err)
	}
	return nil
}

// startOptions say how to start client c, whose init is init: which
// program, and the commands the story sends it, which the program's
// hello must list. A client program runs under the clock shim, on the
// client's own control file, when the story moves a client's wall clock,
// so that its lock's reads of the wall clock move (docs/protocol.md).
func (r *run) startOptions(init protocol.Init) (worker.StartOptions, error) {
	o := worker.StartOptions{Argv: r.clientCmd()}
	if r.sc.Generator != nil {
		o.Ops = append(o.Ops, protocol.OpLoop)
	}
	for _, st := range r.sc.Steps {
		switch st.Do {
		case "acquire", "release", "extend", "write":
			if !slices.Contains(o.Ops, st.Do) {
				o.Ops = append(o.Ops, st.Do)
			}
		}
	}
	if len(o.Argv) > 0 && r.sc.MovesClientClocks() {
		e, err := clockshim.Env(init.ClockFile)
		if err != nil {
			return o, harness("client program under the clock shim: %v", err)
		}
		o.Env = e
		if clock := r.target.ClientClocks[init.Config.ClientID]; clock != nil {
			o.Monotonic = clock.RealMonotonic // a drift runs its CLOCK_MONOTONIC too
		}
	}
	return o, nil
}

// sayClientProgram tells which client program plays the clients, when it
// is not the harness's own worker.
func (r *run) sayClientProgram() {
	argv := r.clientCmd()
	if len(argv) == 0 {
		return
	}
	name, version := "?", 0
	for _, c := range r.clients {
		name, version = c.Hello().Name, c.Hello().Protocol
		break
	}
	r.say("client program: %s (%s), locksim worker protocol v%d", strings.Join(argv, " "), name, version)
}

// startError is the error of a start in which clients failed: one line
// when they all failed alike (a client program that lacks what the story
// needs fails for each), else each error.
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
