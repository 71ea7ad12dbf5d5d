// start.go starts a client program as the worker protocol says
// (docs/protocol.md, package protocol): this binary as the Go worker, or a
// program in any language (scenario field client_cmd), reads its hello
// line and checks it covers the story.

package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
)

// helloTimeout bounds how long a client program may take to print its
// hello line (a runtime starting, modules loading).
var helloTimeout = 15 * time.Second

// StartOptions say which program a client is and what the story needs of it.
type StartOptions struct {
	// Argv is the client program and its arguments (scenario field
	// client_cmd); empty: this binary, re-executed as the Go worker.
	Argv []string
	// Ops are the commands the story will send; the client's hello must
	// list each.
	Ops []string
	// Env are entries added to the program's environment (the clock
	// shim's LD_PRELOAD and control file, when the story moves a client's
	// wall clock).
	Env []string
	// Monotonic maps the program's CLOCK_MONOTONIC readings (its events'
	// instants, lease ends and stalls) to the machine's: under a drift the
	// clock shim runs the program's CLOCK_MONOTONIC at the rate too
	// (clockshim.Control.RealMonotonic). Nil: they are the machine's.
	Monotonic func(int64) int64
}

// HelloError is a client program that did not open the protocol as
// docs/protocol.md says: no hello, a bad one, or one that lacks what the
// story needs.
type HelloError struct {
	// Client is the client's number; 0 for the start that only reads the
	// program's hello (Probe).
	Client int
	// Program is the client's argv, as one string.
	Program string
	Msg     string
}

func (e *HelloError) Error() string {
	if e.Client == 0 {
		return fmt.Sprintf("client program (%s): %s", e.Program, e.Msg)
	}
	return fmt.Sprintf("client %d (%s): %s", e.Client, e.Program, e.Msg)
}

// launched is a client program started and past its hello line.
type launched struct {
	proc  *env.Proc
	stdin io.WriteCloser
	out   *bufio.Reader
	hello protocol.Hello
}

// launch starts client id as o says (o.Argv, or this binary as the Go
// worker) in its own process group, as every child of the harness (so
// SIGSTOP, SIGCONT and kill -9 reach it whole, and it dies with the
// harness), and reads its hello line. Its stderr goes to stderr.
func launch(ctx context.Context, id int, stderr io.Writer, o StartOptions) (*launched, error) {
	argv := o.Argv
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		argv = []string{exe}
	}
	program := programName(o.Argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), protocol.EnvWorker+"=1", protocol.EnvProtocol+"="+strconv.Itoa(protocol.ProtocolVersion), protocol.EnvClient+"="+strconv.Itoa(id))
	cmd.Env = append(cmd.Env, o.Env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	proc, err := env.StartProc(fmt.Sprintf("client %d", id), cmd)
	if err != nil {
		return nil, &HelloError{Client: id, Program: program, Msg: fmt.Sprintf("cannot start it: %v", errors.Unwrap(err))}
	}
	out := bufio.NewReaderSize(stdout, 64*1024)
	hello, err := readHello(ctx, out, proc, stderr)
	if err == nil {
		err = hello.CheckVersion()
	}
	if err == nil {
		err = hello.CheckOwn()
	}
	if err == nil {
		err = hello.CheckPromises()
	}
	if err != nil {
		_ = stdin.Close()
		proc.Kill()
		return nil, &HelloError{Client: id, Program: program, Msg: err.Error()}
	}
	return &launched{proc: proc, stdin: stdin, out: out, hello: hello}, nil
}

// Probe starts client program argv only to read its hello line, and ends
// it: the harness learns what the program covers before it starts any
// server. The program runs as a client does, with LOCKSIM_CLIENT=0; its
// stdin is closed as soon as its hello has been read.
func Probe(ctx context.Context, argv []string) (protocol.Hello, error) {
	stderr, err := os.CreateTemp("", "locksim-hello-*.log")
	if err != nil {
		return protocol.Hello{}, err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	l, err := launch(ctx, 0, stderr, StartOptions{Argv: argv})
	if err != nil {
		return protocol.Hello{}, err
	}
	_ = l.stdin.Close()
	if l.proc.Wait(time.Second) != nil {
		l.proc.Kill()
	}
	return l.hello, nil
}

// StartWith starts client id as o says (launch), checks that its hello
// covers the story's lock and commands, records its events in rec, and
// sends it init. Its stderr goes to stderr (a file).
func StartWith(ctx context.Context, id int, rec *history.Recorder, init protocol.Init, stderr io.Writer, o StartOptions) (*Client, error) {
	l, err := launch(ctx, id, stderr, o)
	if err != nil {
		return nil, err
	}
	if err := l.hello.Covers(init.Lock, o.Ops); err != nil {
		_ = l.stdin.Close()
		l.proc.Kill()
		return nil, &HelloError{Client: id, Program: programName(o.Argv), Msg: err.Error()}
	}
	if own := l.hello.OwnName(init.Lock); own != "" {
		init.Lock = own // the program's lock, by the name it gave it
	}
	c := &Client{ID: id, proc: l.proc, stdin: l.stdin, rec: rec, pending: map[int64]chan error{}, started: map[int64]chan struct{}{}, mono: o.Monotonic}
	c.hello = l.hello
	go c.read(l.out)
	// Init connects the client to its servers; a client that cannot
	// within InitTimeout is a harness failure, never a hang.
	ictx, cancel := context.WithTimeout(ctx, InitTimeout)
	defer cancel()
	if err := c.Do(ictx, protocol.Command{Op: "init", Init: &init}); err != nil {
		c.Stop()
		if ictx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("client %d: init did not finish within %v (connecting to the servers)", id, InitTimeout)
		}
		return nil, fmt.Errorf("client %d: %w", id, err)
	}
	return c, nil
}

// InitTimeout bounds a client's init: building its lock client and
// connecting to the servers.
const InitTimeout = 30 * time.Second

// Hello is the hello line the client program printed.
func (c *Client) Hello() protocol.Hello { return c.hello }

// programName is a client program's argv as one short string.
func programName(argv []string) string {
	if len(argv) == 0 {
		return "the Go worker"
	}
	s := strings.Join(argv, " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// readHello reads the first line the program prints, within helloTimeout.
func readHello(ctx context.Context, out *bufio.Reader, proc *env.Proc, stderr io.Writer) (protocol.Hello, error) {
	type line struct {
		b   []byte
		err error
	}
	ch := make(chan line, 1)
	go func() {
		b, err := out.ReadSlice('\n')
		ch <- line{append([]byte(nil), b...), err}
	}()
	var l line
	select {
	case l = <-ch:
	case <-time.After(helloTimeout):
		return protocol.Hello{}, fmt.Errorf("printed no hello line within %v: a client speaking locksim worker protocol prints {\"protocol\":2,...} first (docs/protocol.md)%s", helloTimeout, lastLine(stderr))
	case <-ctx.Done():
		return protocol.Hello{}, ctx.Err()
	}
	if l.err != nil && len(l.b) == 0 {
		// The program ended (or closed stdout) before its first line.
		select {
		case <-proc.Done():
		case <-time.After(time.Second):
		}
		how := "closed its stdout"
		if proc.Exited() {
			how = "exited"
			if perr := proc.Cmd.ProcessState; perr != nil {
				how = "exited (" + perr.String() + ")"
			}
		}
		return protocol.Hello{}, fmt.Errorf("%s before printing its hello line%s", how, lastLine(stderr))
	}
	if errors.Is(l.err, bufio.ErrBufferFull) {
		return protocol.Hello{}, fmt.Errorf("its first line is longer than %d bytes: not a hello line", out.Size())
	}
	return protocol.ParseHello(l.b)
}

// short is a line cut to a length an error message can carry.
func short(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// lastLine is "; its stderr says: LINE" with the first line the program
// wrote to stderr that names an error (a runtime's stack trace puts the
// error's message on such a line), else its last non-empty line, when its
// stderr is a file; or "".
func lastLine(stderr io.Writer) string {
	f, ok := stderr.(*os.File)
	if !ok {
		return ""
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return ""
	}
	var last string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(strings.ToLower(l), "error") {
			return "; its stderr says: " + short([]byte(l))
		}
		if l != "" {
			last = l
		}
	}
	if last == "" {
		return ""
	}
	return "; its stderr ends: " + short([]byte(last))
}
