package scenarios

import (
	"fmt"

	"locksim/history"
	"locksim/nemesis"
)

// v1Only is why a story cannot be played by a client program: what
// locksim worker protocol v1 gives a client program.
const v1Only = "a client program (client_cmd) speaks locksim worker protocol v1, " +
	"which has acquire, release and extend only (docs/protocol.md)"

// validateClientCmd checks the client_cmd field: a program, and a story
// a client program can play.
func (s *Scenario) validateClientCmd() error {
	if len(s.ClientCmd) == 0 || s.ClientCmd[0] == "" {
		return s.errAt("client_cmd", "expected a program and its arguments, e.g. [node, examples/node-redlock/client.js]")
	}
	return s.ExternalClientProblem()
}

// ExternalClientProblem says why this story cannot be played by clients
// that are a program of their own (client_cmd, or the runner's
// Options.ClientCmd) speaking locksim worker protocol v1, or nil when it
// can. Writes to the protected storage, fencing tokens, the watchdog, the
// careful client's lease check, generator loops and jumps of a client's
// wall clock live in the harness's own Go worker; v1 gives a client
// program acquire, release and extend.
func (s *Scenario) ExternalClientProblem() error {
	switch {
	case s.Generator != nil:
		return s.errAt("generator", "a generator's loop runs inside the harness's own Go worker (command loop); %s", v1Only)
	case s.Storage != "":
		return s.errAt("storage", "the story writes to the protected storage (storage: %s), which only the harness's own Go worker does; %s", s.Storage, v1Only)
	case s.Fence != "":
		return s.errAt("fence", "fencing tokens (fence: %s) are handed out by the harness's own Go worker; %s", s.Fence, v1Only)
	case s.Watchdog != "":
		return s.errAt("watchdog", "the watchdog (watchdog: %s) runs inside the harness's own Go worker; %s", s.Watchdog, v1Only)
	case s.CheckLease:
		return s.errAt("check_lease", "the lease check before a write is the harness's own Go worker's; %s", v1Only)
	}
	for i, st := range s.Steps {
		at := func(field, format string, args ...any) error {
			line := st.lines[field]
			if line == 0 {
				line = st.Line
			}
			return &Error{File: s.File, Line: line, Field: fmt.Sprintf("steps[%d].%s", i, field), Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case st.Do == "write":
			return at("do", "a write to the protected storage is made by the harness's own Go worker; %s", v1Only)
		case st.Do == "renewal":
			return at("do", "a renewal is the harness's own Go worker's watchdog; %s", v1Only)
		case clientClockFault(st):
			return at("do", "a jump of a client's wall clock moves the clock the harness's own Go worker reads (its clock_file); "+
				"a client program keeps the machine's wall clock; %s", v1Only)
		}
	}
	return nil
}

// clientClockFault says whether the step moves a client's wall clock.
func clientClockFault(st Step) bool {
	k, ok := nemesis.LookupKind(st.Do)
	if !ok || k.New == nil {
		return false
	}
	f := k.New(st.Params).Fields()
	return f.Effect == history.EffectClock && f.Client != 0
}
