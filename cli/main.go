// Package cli is sim's command line: it runs lock-safety scenarios on
// real servers and reports verdicts. Exit codes: 0 the verdicts matched
// what was expected, 1 one did not, 2 the harness itself failed (bad
// input, a server that would not start), 130 interrupted.
//
// Main is the whole of sim, importable: a team's own main registers its
// lock and runs the same commands (docs/plugins.md):
//
//	func main() {
//		clients.Register(mylock.Spec)
//		os.Exit(cli.Main())
//	}
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/worker"
)

// Main is sim: it runs the command os.Args names and returns the exit
// code. When the harness started this process as a client worker, it
// serves the worker protocol instead and never returns, which is why
// every lock must be registered before Main is called.
func Main() int {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(checker.MemoryLimit)
	}
	worker.MaybeRun()
	return Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Execute runs the CLI on args and returns the exit code.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	defer func() {
		// Whatever happens, nothing the harness started outlives it.
		if p := recover(); p != nil {
			env.Cleanup()
			panic(p)
		}
		env.Cleanup()
	}()
	root := newRoot(stdin, stdout, stderr)
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	root.SetArgs(normalizeFlags(root, args))
	return exit(stderr, root.Execute())
}

// Exit codes.
const (
	exitOK          = 0
	exitMismatch    = 1
	exitHarness     = 2
	exitInterrupted = 130
)

// exitError is an error that ends sim with its own exit code: a verdict
// not the one expected (exitMismatch), an interrupt (exitInterrupted),
// or a failure the command has already said (exitHarness). Every other
// error is bad input or a harness failure: exit 2. err is printed as any
// error is; nil when what the command printed says it all.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

var (
	// errMismatch: a verdict was not the one expected, and the verdict
	// lines said which.
	errMismatch error = &exitError{code: exitMismatch}
	// errFailed: the harness failed, and the command said how as it went.
	errFailed error = &exitError{code: exitHarness}
)

// stopSignals end a command that starts servers the way it ends anyway:
// its servers and clients stopped, their temp dirs removed, what it had
// kept. SIGINT is Ctrl-C, SIGTERM kill's default, and SIGHUP what a
// closing terminal sends (a workshop whose window was closed).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// untilStopped is ctx, ended by the first of stopSignals: every command
// that starts servers runs under it. stop gives the signals back their
// default (a second one then ends sim at once).
func untilStopped(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, stopSignals...)
}

// interrupted ends a command cut short by a signal, saying what it kept.
func interrupted(format string, args ...any) error {
	return &exitError{code: exitInterrupted, err: fmt.Errorf(format, args...)}
}

// exit says err in one line on stderr (each error of a join on its own
// line) and returns its exit code, the first error's. This is the one
// place an error becomes an exit code.
func exit(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if x, ok := e.(*exitError); !ok || x.err != nil {
			warn(stderr, e)
		}
	}
	var x *exitError
	switch {
	case errors.As(errs[0], &x):
		return x.code
	case errors.Is(errs[0], context.Canceled):
		return exitInterrupted
	}
	return exitHarness
}

// warn says err in one line on stderr, for a command that goes on.
func warn(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "sim: %v\n", err)
}
