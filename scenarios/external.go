package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/history"
)

// ClientProgram is what a client program's hello line says it covers
// (protocol.Hello, docs/protocol.md): the protocol version it speaks, the
// locks it implements, the commands it carries out and, from version 2
// on, the storage modes, fencing-token sources and watchdogs it has,
// whether it checks its lease before a write and whether a clock-jump
// moves the wall clock its lock reads.
type ClientProgram struct {
	// Program is the program's argv as one string, for messages.
	Program  string
	Protocol int
	Locks    []string
	Ops      []string
	// StorageModes, Fences, Watchdogs, CheckLease and ClientClock are
	// version 2's; a version 1 program has none of them.
	StorageModes []string
	Fences       []string
	Watchdogs    []string
	CheckLease   bool
	ClientClock  bool
	// AcquireWait (v2) says an acquire can wait for a held lock (the
	// command's wait), as its library waits.
	AcquireWait bool
}

// validateClientCmd checks the client_cmd field: a program, and a story
// some client program can play (which program, and so what it covers, is
// known once it has printed its hello, when the story is run).
func (s *Scenario) validateClientCmd() error {
	if len(s.ClientCmd) == 0 || s.ClientCmd[0] == "" {
		return s.errAt("client_cmd", "expected a program and its arguments, e.g. [node, examples/node-redlock/client.js]")
	}
	return s.ClientProgramProblem(nil)
}

// ClientProgramProblem says why this story cannot be played by clients
// that are program p (client_cmd, or the runner's Options.ClientCmd), as
// its hello describes it, or nil when it can: one error naming the file,
// the line and the field that asks for what p does not cover. With p nil
// it says only what no client program can play: a generator, whose loop
// runs inside the harness's own Go worker.
func (s *Scenario) ClientProgramProblem(p *ClientProgram) error {
	if s.Generator != nil {
		return s.errAt("generator", "a generator's loop runs inside the harness's own Go worker (command loop); "+
			"a client program (client_cmd) plays scripted stories only (docs/protocol.md)")
	}
	if p == nil {
		return nil
	}
	covered := p.Covered()
	p = &covered
	lacks := func(field, what, list string, has []string) error {
		return s.errAt(field, "the story needs %s, which the client program (%s) does not cover (%s)", what, p.Program, p.covers(list, has))
	}
	switch {
	case !slices.Contains(p.Locks, s.Lock):
		return lacks("lock", "lock "+s.Lock, "locks", p.Locks)
	case s.Storage != "" && !slices.Contains(p.StorageModes, s.Storage):
		return lacks("storage", fmt.Sprintf("writes to the protected storage in mode %s", s.Storage), "storage_modes", p.StorageModes)
	case s.Fence != "" && !slices.Contains(p.Fences, s.Fence):
		return lacks("fence", fmt.Sprintf("fencing tokens from %s", s.Fence), "fences", p.Fences)
	case s.Watchdog != "" && !slices.Contains(p.Watchdogs, s.Watchdog):
		return lacks("watchdog", fmt.Sprintf("the watchdog %s, each renewal reported", s.Watchdog), "watchdogs", p.Watchdogs)
	case s.CheckLease && !p.CheckLease:
		return lacks("check_lease", "the lease check before a write", "check_lease", nil)
	}
	for i, st := range s.Steps {
		at := func(format string, args ...any) error {
			line := st.givenAt["do"]
			if line == 0 {
				line = st.Line
			}
			return &Error{File: s.File, Line: line, Field: fmt.Sprintf("steps[%d].do", i), Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case slices.Contains(clientOps, st.Do) && !slices.Contains(p.Ops, st.Do):
			return at("the story needs the command %s, which the client program (%s) does not cover (%s)", st.Do, p.Program, p.covers("ops", p.Ops))
		case st.Wait.Duration > 0 && !p.AcquireWait:
			return at("the story's acquire waits for the lock (wait: %v), which the client program (%s) does not do (%s)",
				st.Wait.Duration, p.Program, p.covers("acquire_wait", nil))
		case MovesClientClock(st) && !p.ClientClock:
			return at("the story jumps a client's wall clock, which the client program (%s) does not let the harness move (%s)",
				p.Program, p.covers("client_clock", nil))
		case st.Period != "":
			return &Error{File: s.File, Line: st.Line, Field: fmt.Sprintf("steps[%d].period", i),
				Msg: fmt.Sprintf("the story's write runs a job for period %s, whose row only the harness's own worker writes; a client program (%s) cannot yet", st.Period, p.Program)}
		case st.At != "":
			return &Error{File: s.File, Line: st.Line, Field: fmt.Sprintf("steps[%d].at", i),
				Msg: fmt.Sprintf("the story anchors a pause at %s, where only the harness's own worker stops itself; a client program (%s) cannot yet (docs/protocol.md, Stopping after the check)", st.At, p.Program)}
		}
	}
	return nil
}

// clientOps are the story's commands a client program lists in its hello.
var clientOps = []string{history.OpAcquire, history.OpRelease, history.OpExtend, history.OpWrite}

// Covered is what p covers: a version 1 program nothing beyond its locks
// and its commands, whatever else its line says.
func (p ClientProgram) Covered() ClientProgram {
	if p.Protocol < 2 {
		p.StorageModes, p.Fences, p.Watchdogs, p.CheckLease, p.ClientClock, p.AcquireWait = nil, nil, nil, false, false, false
	}
	return p
}

// covers says what p's hello lists in field, for a refusal: the list, or
// that a version 1 program has no such field at all.
func (p *ClientProgram) covers(field string, has []string) string {
	if p.Protocol < 2 && field != "locks" && field != "ops" {
		return fmt.Sprintf("it speaks locksim worker protocol v%d, which has acquire, release and extend only; "+
			"%s came with v2, docs/protocol.md", p.Protocol, field)
	}
	if has == nil && (field == "check_lease" || field == "client_clock" || field == "acquire_wait") {
		return fmt.Sprintf("its hello does not say %s: true; docs/protocol.md", field)
	}
	return fmt.Sprintf("its hello: %s [%s]; docs/protocol.md", field, strings.Join(has, " "))
}

// MovesClientClock says whether the step moves a client's wall clock
// (a clock-jump or a clock-drift aimed at a client).
func MovesClientClock(st Step) bool {
	f, ok := st.Fault()
	return ok && f.Effect == history.EffectClock && f.Client != 0
}

// MovesClientClocks says whether any step of the story moves a client's
// wall clock.
func (s *Scenario) MovesClientClocks() bool {
	return slices.ContainsFunc(s.Steps, MovesClientClock)
}
