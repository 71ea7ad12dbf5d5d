package runner

import (
	"os"
	"testing"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/worker"
)

// The test binary doubles as the worker binary (LOCKSIM_WORKER=1) and as
// a client of the benchmark's process floor (LOCKSIM_FLOOR_PROCESS).
func TestMain(m *testing.M) {
	worker.MaybeRun()
	maybeFloorProcess() // generator_bench_test.go
	code := m.Run()
	env.Cleanup()
	os.Exit(code)
}
