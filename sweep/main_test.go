package sweep

import (
	"os"
	"testing"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/worker"
)

// The test binary doubles as the worker binary (LOCKSIM_WORKER=1).
func TestMain(m *testing.M) {
	worker.MaybeRun()
	code := m.Run()
	env.Cleanup()
	os.Exit(code)
}
