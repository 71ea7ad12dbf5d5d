// Package deploy's tests check what takes locksim beyond one machine: the
// locksim image (docker/build-images), --shard auto as an engine starts it
// (a Kubernetes Indexed Job, a CI matrix), and the Actions workflow. The
// Kubernetes manifests are in kubernetes/, a module of their own (see its
// README) whose test make test runs too.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	simBin    string
	buildErr  error
	binDir    string
)

// sim is sim built from this checkout, once, for the tests that start it
// as separate processes, as an engine would.
func sim(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "locksim-deploy-"); buildErr != nil {
			return
		}
		simBin = filepath.Join(binDir, "sim")
		if out, err := exec.Command("go", "build", "-o", simBin, "github.com/locksim/locksim/cmd/sim").CombinedOutput(); err != nil {
			buildErr = &buildError{err, out}
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return simBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
