package env

import (
	"fmt"
	"sync"
)

// process is a server's process as the harness controls it: a local child
// (Proc) or a container of the docker backend (Container).
type process interface {
	Pid() int
	Done() <-chan struct{}
	Exited() bool
	Err() error
	// Freeze stops every process of the server (SIGSTOP to the group, or
	// the cgroup freezer): its sockets stay open, nothing answers.
	Freeze() error
	// Thaw undoes Freeze.
	Thaw() error
	// Kill ends it with SIGKILL and waits until it is gone.
	Kill()
}

// serverProc is a server's current process, as pause, resume, crash and
// restart see it: a redis-server or an etcd member embeds one. A restart
// replaces the process (set).
type serverProc struct {
	what   string // "redis A", "etcd B": for errors
	mu     sync.Mutex
	proc   process
	paused bool
}

// set makes p the current process, running.
func (s *serverProc) set(p process) {
	s.mu.Lock()
	s.proc, s.paused = p, false
	s.mu.Unlock()
}

// Proc is the current process (nil before the first start).
func (s *serverProc) Proc() process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Running reports whether the process is alive (a paused one is).
func (s *serverProc) Running() bool {
	p := s.Proc()
	return p != nil && !p.Exited()
}

// Paused reports whether the process is stopped by Pause.
func (s *serverProc) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && s.proc != nil && !s.proc.Exited()
}

// Crash kills the process with SIGKILL (no shutdown, no final fsync) and
// waits until it is reaped. Idempotent.
func (s *serverProc) Crash() {
	if p := s.Proc(); p != nil {
		p.Kill()
	}
}

// Pause stops the process (SIGSTOP; in a container, the cgroup freezer):
// it keeps its connections but answers nothing until Resume.
func (s *serverProc) Pause() error { return s.freeze("pause", process.Freeze, true) }

// Resume continues a paused process (SIGCONT; docker unpause); on one not
// paused it does nothing.
func (s *serverProc) Resume() error { return s.freeze("resume", process.Thaw, false) }

func (s *serverProc) freeze(verb string, do func(process) error, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("%s %s: not started", verb, s.what)
	}
	if !paused && !s.paused {
		return nil // resumed already (a container refuses a second unpause)
	}
	if err := do(s.proc); err != nil {
		return fmt.Errorf("%s %s: %w", verb, s.what, err)
	}
	s.paused = paused
	return nil
}
