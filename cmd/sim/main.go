// Command sim is locksim's command line: it runs lock-safety scenarios on
// real servers and reports verdicts. Exit codes: 0 the verdicts matched
// what was expected, 1 one did not, 2 the harness itself failed (bad
// input, a server that would not start), 130 interrupted.
package main

import (
	"os"
	"runtime/debug"

	"locksim/checker"
	"locksim/worker"
)

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(checker.MemoryLimit)
	}
	worker.MaybeRun()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
