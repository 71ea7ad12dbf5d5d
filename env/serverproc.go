package env

import (
	"fmt"
	"sync"
	"syscall"
)

// serverProc is a server's current process, as pause, resume, crash and
// restart see it: a redis-server or an etcd member embeds one. A restart
// replaces the process (set).
type serverProc struct {
	what   string // "redis A", "etcd B": for errors
	mu     sync.Mutex
	proc   *Proc
	paused bool
}

// set makes p the current process, running.
func (s *serverProc) set(p *Proc) {
	s.mu.Lock()
	s.proc, s.paused = p, false
	s.mu.Unlock()
}

// Proc is the current process (nil before the first start).
func (s *serverProc) Proc() *Proc {
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

// Pause stops the process with SIGSTOP: it keeps its connections but
// answers nothing until Resume.
func (s *serverProc) Pause() error { return s.signal("pause", syscall.SIGSTOP, true) }

// Resume continues a paused process with SIGCONT.
func (s *serverProc) Resume() error { return s.signal("resume", syscall.SIGCONT, false) }

func (s *serverProc) signal(verb string, sig syscall.Signal, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("%s %s: not started", verb, s.what)
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("%s %s: %w", verb, s.what, err)
	}
	s.paused = paused
	return nil
}
