// protocol.go is the worker protocol as a versioned contract ("locksim
// worker protocol", docs/protocol.md): the hello line every client
// program prints first, and how the harness starts a client program that
// is not this binary (a client in any language, scenario field
// client_cmd).

package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/storage"
)

// ProtocolVersion is the newest version of the worker protocol this
// harness speaks; it speaks every version from MinProtocolVersion on, and
// each client program says in its hello which one it speaks.
const (
	ProtocolVersion    = 2
	MinProtocolVersion = 1
)

// Environment variables the harness sets for every client program, beside
// EnvVar (LOCKSIM_WORKER=1) and its own environment.
const (
	// EnvProtocol is the newest protocol version the harness speaks ("2").
	EnvProtocol = "LOCKSIM_PROTOCOL"
	// EnvClient is the client's number in the story ("1", "2", ...; "0"
	// when the harness starts the program only to read its hello).
	EnvClient = "LOCKSIM_CLIENT"
)

// Hello is the first line a client program prints on stdout, before it
// reads anything: the protocol version it speaks, the locks it implements
// and the commands it carries out; from version 2 on, what it does beyond
// acquire, release and extend.
type Hello struct {
	// Protocol is the protocol version (1 or 2).
	Protocol int `json:"protocol"`
	// Name says what the client is, for the narration and its log
	// ("node-redlock: redlock 5.0.0-beta.2, ioredis 5.11.1").
	Name string `json:"name,omitempty"`
	// Locks lists the lock algorithms (names of the catalogue: redlock,
	// redis, ...) the client implements; the story's lock must be one. A
	// lock of the program's own (Own) counts here by the catalogue lock
	// it stands in for.
	Locks []string `json:"locks"`
	// Own are the program's own locks, each written in the hello's
	// locks as an object ({"name": "my-lock", "like": "redis", "servers":
	// "redis"}) rather than a catalogue name.
	Own []OwnLock `json:"-"`
	// Ops lists the commands it carries out (acquire, release, extend,
	// and write from v2 on; loop is the harness's own worker's); every
	// command the story sends must be one.
	Ops []string `json:"ops"`
	// StorageModes (v2) lists the modes of the protected storage
	// (storage.Modes) whose read-modify-write the client makes itself.
	StorageModes []string `json:"storage_modes,omitempty"`
	// Fences (v2) lists the fencing-token sources (postgres, redis-incr,
	// redlock-incr) the client draws a granted lease's token from.
	Fences []string `json:"fences,omitempty"`
	// Watchdogs (v2) lists the renewals (token, pexpire) the client runs
	// in the background while it holds a lease, reporting each one.
	Watchdogs []string `json:"watchdogs,omitempty"`
	// CheckLease (v2) says the client checks, just before a write, that
	// its lease is still valid as its lock measures it.
	CheckLease bool `json:"check_lease,omitempty"`
	// ClientClock (v2) says a clock-jump on the client moves the wall
	// clock its lock reads: it reads it through libc, under the clock
	// shim the harness preloads, or from init's clock_file.
	ClientClock bool `json:"client_clock,omitempty"`
	// AcquireWait (v2) says an acquire whose command carries a wait waits
	// up to that long for a held lock, the way the client's library
	// waits (a blocking call, its retries), instead of trying once.
	AcquireWait bool `json:"acquire_wait,omitempty"`
}

// OwnLock is a lock of a client program's own: its name, the catalogue
// lock it stands in for (the stories of that lock's servers are the ones
// it plays, and it is judged against that lock, played on the same
// story), and the servers it runs on, which must be that lock's.
type OwnLock struct {
	Name    string `json:"name"`
	Like    string `json:"like"`
	Servers string `json:"servers,omitempty"`
}

// UnmarshalJSON reads a hello line whose locks may mix catalogue names
// and own locks (OwnLock objects).
func (h *Hello) UnmarshalJSON(b []byte) error {
	type fields Hello
	var raw struct {
		fields
		Locks []json.RawMessage `json:"locks"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*h = Hello(raw.fields)
	h.Locks, h.Own = nil, nil
	for _, l := range raw.Locks {
		var name string
		if json.Unmarshal(l, &name) == nil {
			h.Locks = append(h.Locks, name)
			continue
		}
		var own OwnLock
		if err := json.Unmarshal(l, &own); err != nil {
			return fmt.Errorf("locks: %s is neither a catalogue name nor {\"name\", \"like\", \"servers\"}", short(l))
		}
		h.Own = append(h.Own, own)
		h.Locks = append(h.Locks, own.Like)
	}
	return nil
}

// OwnName is the program's own name for the catalogue lock it stands in
// for (init's lock, the judged lock's name), "" when it implements that
// lock under the catalogue's name.
func (h Hello) OwnName(lock string) string {
	for _, o := range h.Own {
		if o.Like == lock {
			return o.Name
		}
	}
	return ""
}

// checkOwn checks the hello's own locks: each named, standing in for a
// registered lock, on that lock's servers, and no catalogue lock claimed
// twice.
func checkOwn(h Hello) error {
	if len(h.Own) > 0 && h.Protocol < 2 {
		return fmt.Errorf("its hello names a lock of its own (%s), which came with protocol v2; it speaks v%d (docs/protocol.md)", h.Own[0].Name, h.Protocol)
	}
	seen := map[string]bool{}
	for _, l := range h.Locks {
		if seen[l] {
			return fmt.Errorf("its hello's locks name %s twice (a catalogue name, or an own lock's like): which one plays it?", l)
		}
		seen[l] = true
	}
	for _, o := range h.Own {
		if o.Name == "" || o.Like == "" {
			return fmt.Errorf("its hello's own lock %+v: expected a name and like, the catalogue lock it stands in for (docs/protocol.md)", o)
		}
		spec, err := clients.Lookup(o.Like)
		if err != nil {
			return fmt.Errorf("its hello's own lock %s is like %s: %v", o.Name, o.Like, err)
		}
		if o.Servers != "" && o.Servers != string(spec.Backend) {
			return fmt.Errorf("its hello's own lock %s runs on %s, but the lock it is like, %s, runs on %s: give like a lock of its servers (sim locks)", o.Name, o.Servers, o.Like, spec.Backend)
		}
	}
	return nil
}

// GoOps are the commands the harness's own worker carries out.
var GoOps = []string{history.OpAcquire, history.OpRelease, history.OpExtend, history.OpWrite, OpLoop}

// goHello is the hello of the harness's own worker: every registered lock
// and every command.
func goHello() Hello {
	h := Hello{Protocol: ProtocolVersion, Name: "locksim Go worker", Locks: clients.Names(), Ops: GoOps,
		Fences: []string{clients.FencePostgres, clients.FenceRedisIncr, clients.FenceRedlockIncr}, Watchdogs: []string{"token", "pexpire"},
		CheckLease: true, ClientClock: true, AcquireWait: true}
	for _, m := range storage.Modes() {
		h.StorageModes = append(h.StorageModes, string(m))
	}
	return h
}

// writeHello prints the harness's own worker's hello line.
func writeHello(w io.Writer) error {
	b, err := json.Marshal(goHello())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

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
	hello Hello
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
	cmd.Env = append(os.Environ(), EnvVar+"=1", EnvProtocol+"="+strconv.Itoa(ProtocolVersion), EnvClient+"="+strconv.Itoa(id))
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
		err = checkVersion(hello)
	}
	if err == nil {
		err = checkOwn(hello)
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
func Probe(ctx context.Context, argv []string) (Hello, error) {
	stderr, err := os.CreateTemp("", "locksim-hello-*.log")
	if err != nil {
		return Hello{}, err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	l, err := launch(ctx, 0, stderr, StartOptions{Argv: argv})
	if err != nil {
		return Hello{}, err
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
func StartWith(ctx context.Context, id int, rec *history.Recorder, init Init, stderr io.Writer, o StartOptions) (*Client, error) {
	l, err := launch(ctx, id, stderr, o)
	if err != nil {
		return nil, err
	}
	if err := checkHello(l.hello, init.Lock, o.Ops); err != nil {
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
	if err := c.Do(ictx, Command{Op: "init", Init: &init}); err != nil {
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
func (c *Client) Hello() Hello { return c.hello }

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
func readHello(ctx context.Context, out *bufio.Reader, proc *env.Proc, stderr io.Writer) (Hello, error) {
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
		return Hello{}, fmt.Errorf("printed no hello line within %v: a client speaking locksim worker protocol prints {\"protocol\":2,...} first (docs/protocol.md)%s", helloTimeout, lastLine(stderr))
	case <-ctx.Done():
		return Hello{}, ctx.Err()
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
		return Hello{}, fmt.Errorf("%s before printing its hello line%s", how, lastLine(stderr))
	}
	if errors.Is(l.err, bufio.ErrBufferFull) {
		return Hello{}, fmt.Errorf("its first line is longer than %d bytes: not a hello line", out.Size())
	}
	var h Hello
	dec := json.NewDecoder(bytes.NewReader(l.b))
	if err := dec.Decode(&h); err != nil || h.Protocol == 0 {
		return Hello{}, fmt.Errorf("its first line is not a hello line ({\"protocol\":2,\"locks\":[...],\"ops\":[...]}, docs/protocol.md): %q", short(l.b))
	}
	return h, nil
}

// checkVersion checks that the client speaks a version of the protocol
// this harness speaks.
func checkVersion(h Hello) error {
	if h.Protocol < MinProtocolVersion || h.Protocol > ProtocolVersion {
		return fmt.Errorf("speaks locksim worker protocol v%d; this harness speaks v%d to v%d (docs/protocol.md)", h.Protocol, MinProtocolVersion, ProtocolVersion)
	}
	return nil
}

// checkHello checks that the client implements lock and carries out
// every command in ops.
func checkHello(h Hello, lock string, ops []string) error {
	if lock != "" && !slices.Contains(h.Locks, lock) {
		return fmt.Errorf("implements the locks %v (its hello); the story needs lock %s", h.Locks, lock)
	}
	for _, op := range ops {
		if !slices.Contains(h.Ops, op) {
			return fmt.Errorf("carries out %v (its hello); the story needs %q too", h.Ops, op)
		}
	}
	return nil
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
