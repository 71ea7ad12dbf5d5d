package env

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/clockshim"
)

// Memcached is a real memcached child process on 127.0.0.1 (Debian's
// memcached package), running under the clock shim. memcached keeps
// everything in memory: a crash and restart loses every key.
//
// Its clock: memcached counts a key's expiry in whole seconds of its own
// current_time, which a timer advances once a second from
// CLOCK_MONOTONIC (memcached.c, clock_handler). So a key set with an
// exptime of n seconds lives between n-1 and n seconds, and a clock jump
// (the wall clock alone) does not move it, while a drift does.
type Memcached struct {
	Name string
	Addr string // 127.0.0.1:Port
	Port int
	// Dir is the server's own dir (its stderr, the clock file).
	Dir     string
	clock   *clockshim.Control // the clocks this server sees
	shimEnv []string
	serverProc
}

// MemcachedStartTimeout bounds how long StartMemcached and Restart wait
// for the server to answer.
const MemcachedStartTimeout = 3 * time.Second

// memcachedPath finds the memcached binary.
func memcachedPath() string {
	if p, err := exec.LookPath("memcached"); err == nil {
		return p
	}
	return "/usr/bin/memcached"
}

// MemcachedVersion is the version of the local memcached ("1.6.18"), or
// "" when it cannot be read.
func MemcachedVersion() string {
	out, err := exec.Command(memcachedPath(), "-V").Output()
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "memcached ")
}

// StartMemcached starts memcached, named name ("A"), on a free port of
// 127.0.0.1 with its files in dir/memcached-<name> (dir "": a new temp dir
// that Cleanup removes), under the clock shim, and waits until it answers
// "version". The process dies with the harness (see StartProc).
func StartMemcached(ctx context.Context, name, dir string) (*Memcached, error) {
	if name == "" {
		return nil, errors.New("start memcached: no name")
	}
	if dir == "" {
		d, err := TempDir("locksim-memcached-")
		if err != nil {
			return nil, fmt.Errorf("start memcached %s: %w", name, err)
		}
		dir = d
	}
	own, err := filepath.Abs(filepath.Join(dir, "memcached-"+name))
	if err != nil {
		return nil, fmt.Errorf("start memcached %s: %w", name, err)
	}
	if err := os.MkdirAll(own, 0o755); err != nil {
		return nil, fmt.Errorf("start memcached %s: %w", name, err)
	}
	clock, err := clockshim.NewControl(filepath.Join(own, "clock"))
	if err != nil {
		return nil, fmt.Errorf("start memcached %s: %w", name, err)
	}
	shimEnv, err := clockshim.Env(clock.Path())
	if err != nil {
		clock.Close()
		return nil, fmt.Errorf("start memcached %s: %w", name, err)
	}
	m := &Memcached{Name: name, Dir: own, clock: clock, shimEnv: shimEnv,
		serverProc: serverProc{what: "memcached " + name}}
	err = onFreePort(ctx, func(port int) error {
		m.Port, m.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return m.start(ctx)
	})
	if err != nil {
		clock.Close()
		return nil, fmt.Errorf("start memcached %s: %w", name, err)
	}
	return m, nil
}

// stderrPath is the file memcached's messages go to.
func (m *Memcached) stderrPath() string { return filepath.Join(m.Dir, "memcached.stderr") }

// start starts the server on m.Port and waits until it answers.
func (m *Memcached) start(ctx context.Context) error {
	stderr, err := os.OpenFile(m.stderrPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stderr.Close() // the child has its own copy
	logStart := redisFileSize(m.stderrPath())
	// -U 0: no UDP; -t 1: one worker thread (a lock's load is small);
	// -u: memcached refuses to run as root without a user to be.
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(m.Port), "-U", "0", "-t", "1", "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	cmd := exec.Command(memcachedPath(), args...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), m.shimEnv...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	p, err := StartProc("memcached "+m.Name, cmd)
	if err != nil {
		return err
	}
	m.set(p)
	if err := memcachedWait(ctx, m.Addr, p, MemcachedStartTimeout); err != nil {
		p.Kill()
		said := redisTailFrom(m.stderrPath(), logStart)
		e := fmt.Errorf("start memcached %s on %s: %w\n%s", m.Name, m.Addr, err, strings.TrimSpace(said))
		return clash(e, "Address already in use")
	}
	return nil
}

// memcachedWait waits until addr answers "version", the process exits,
// ctx ends or d passes.
func memcachedWait(ctx context.Context, addr string, p process, d time.Duration) error {
	return waitAnswers(ctx, p, d, "memcached", "answer to version", func() error {
		_, err := memcachedCommand(addr, "version", 200*time.Millisecond)
		return err
	})
}

// memcachedCommand sends one text-protocol command line to addr on a
// new connection and returns its one-line answer.
func memcachedCommand(addr, line string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(line + "\r\n")); err != nil {
		return "", err
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(answer), err
}

// Restart kills the server (kill -9: it had nothing on disk) and starts
// it again on the same port, empty.
func (m *Memcached) Restart(ctx context.Context) error {
	m.Crash()
	return retryClash(ctx, func() error { return m.start(ctx) })
}

// Reset readies the server for a generator's next trial: its clock put
// back, resumed if paused, every key gone (flush_all).
func (m *Memcached) Reset(ctx context.Context) error {
	m.clock.Reset()
	if !m.Running() {
		return fmt.Errorf("reset memcached %s: not running", m.Name)
	}
	if err := m.Resume(); err != nil {
		return err
	}
	answer, err := memcachedCommand(m.Addr, "flush_all", 2*time.Second)
	if err == nil && answer != "OK" {
		err = fmt.Errorf("answered %q", answer)
	}
	if err != nil {
		return fmt.Errorf("reset memcached %s: flush_all: %w", m.Name, err)
	}
	return nil
}

// Close stops the server and unmaps its clock; its dir stays (it belongs
// to the caller's dir or to Cleanup).
func (m *Memcached) Close() error {
	m.Crash()
	return m.clock.Close()
}

// Clock shifts the clocks this server sees (its clock faults).
func (m *Memcached) Clock() *clockshim.Control { return m.clock }
