// Package env starts, resets and stops what a run needs: real redis-server
// and PostgreSQL processes on 127.0.0.1, the in-process toxiproxy server
// and its proxies, and a temp dir per run. Everything it starts is
// registered here so that it dies with the harness on every exit path.
package env

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process the harness started. It runs in its own process
// group, and the kernel kills it if the harness dies (Pdeathsig).
type Proc struct {
	// Name says what the process is, for errors ("redis C").
	Name string
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

var (
	liveMu sync.Mutex
	live   = map[*Proc]struct{}{}
)

// StartProc starts cmd in its own process group with Pdeathsig set, and
// registers it so that KillAll reaches it.
func StartProc(name string, cmd *exec.Cmd) (*Proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	liveMu.Lock()
	live[p] = struct{}{}
	liveMu.Unlock()
	go func() {
		p.err = cmd.Wait()
		liveMu.Lock()
		delete(live, p)
		liveMu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id (also its process group id).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the whole process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("%s has exited", p.Name)
	}
	return syscall.Kill(-p.Pid(), sig)
}

// Err is how the process ended (nil before it has).
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Freeze stops the process group with SIGSTOP.
func (p *Proc) Freeze() error { return p.Signal(syscall.SIGSTOP) }

// Thaw continues it with SIGCONT.
func (p *Proc) Thaw() error { return p.Signal(syscall.SIGCONT) }

// Kill sends SIGKILL to the process group (SIGCONT too, so a stopped
// group goes) and waits for the process to be reaped.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	_ = syscall.Kill(-p.Pid(), syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// Wait waits for the process to exit, at most d.
func (p *Proc) Wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("%s still running after %v", p.Name, d)
	}
}

// KillAll kills every process the harness started that is still running,
// and removes every container it started. The CLI calls it on every exit
// path, including panics and signals.
func KillAll() {
	defer killContainers()
	liveMu.Lock()
	procs := make([]*Proc, 0, len(live))
	for p := range live {
		procs = append(procs, p)
	}
	liveMu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
}

// LiveCount is how many started processes are still running.
func LiveCount() int {
	liveMu.Lock()
	defer liveMu.Unlock()
	return len(live)
}

var (
	dirsMu sync.Mutex
	dirs   = map[string]struct{}{}
)

// TempDir makes a temp dir that Cleanup removes on exit, named with this
// process as its owner so that a later start reaps it if this process is
// killed (reap.go). pattern must start with "locksim-" and end with "-".
func TempDir(pattern string) (string, error) {
	return tempDirIn("", pattern)
}

// dirOrTemp is dir made absolute and created if missing, or, with dir "",
// a new temp dir made by temp (TempDir, fastTempDir) with pattern.
func dirOrTemp(dir string, temp func(pattern string) (string, error), pattern string) (string, error) {
	if dir == "" {
		return temp(pattern)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// tempDirIn makes a temp dir under parent ("" for the default) and
// registers it for Cleanup.
func tempDirIn(parent, pattern string) (string, error) {
	tag, err := ownerTag()
	if err != nil {
		return "", err
	}
	d, err := os.MkdirTemp(parent, pattern+tag+"-*")
	if err != nil {
		return "", err
	}
	dirsMu.Lock()
	dirs[d] = struct{}{}
	dirsMu.Unlock()
	return d, nil
}

// RemoveTempDir removes one dir made by TempDir.
func RemoveTempDir(d string) {
	dirsMu.Lock()
	delete(dirs, d)
	dirsMu.Unlock()
	_ = os.RemoveAll(d)
}

// Cleanup kills every live process and removes every temp dir.
func Cleanup() {
	KillAll()
	dirsMu.Lock()
	ds := make([]string, 0, len(dirs))
	for d := range dirs {
		ds = append(ds, d)
	}
	dirsMu.Unlock()
	for _, d := range ds {
		RemoveTempDir(d)
	}
}
