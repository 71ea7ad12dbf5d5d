// Command etcdbuild builds each etcd version of env.EtcdBuilds that is not
// built yet into env.EtcdBuildDir, from its module here (VERSION/go.mod
// and go.sum, which require go.etcd.io/etcd/server/v3 at that version:
// the Go module proxy serves it, and its root package is etcd's main),
// with locksim's clock hook in its Go runtime (clockhook.go,
// env.EtcdClockHook), so that a clock fault reaches it.
// `make test-deps` runs it from the repository's root; a version built
// is not built again (how long a build takes: docs/locks.md).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/locksim/locksim/env"
)

func main() {
	if err := buildAll(filepath.Join("env", "etcdbuild")); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbuild:", err)
		os.Exit(1)
	}
}

// buildAll builds the versions not built yet, from their modules in src.
func buildAll(src string) error {
	for _, v := range env.EtcdBuilds {
		bin, err := env.EtcdBuilt(v)
		if err != nil {
			return err
		}
		marker, err := env.EtcdHookMarker(v)
		if err != nil {
			return err
		}
		if _, err := os.Stat(bin); err == nil && env.EtcdClockless(bin) == "" {
			continue
		}
		fmt.Printf("building etcd %s into %s (4 to 7 minutes on a busy 2-core machine)\n", v, bin)
		started := time.Now()
		if err := build(filepath.Join(src, v), bin); err != nil {
			return fmt.Errorf("etcd %s: %w", v, err)
		}
		got, err := env.EtcdVersion(bin)
		if err != nil || got != v {
			os.Remove(bin)
			return fmt.Errorf("etcd %s: the binary built says %q (%v)", v, got, err)
		}
		if err := os.WriteFile(marker, []byte(env.EtcdClockHook+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Printf("built etcd %s in %s\n", v, time.Since(started).Round(time.Second))
	}
	return nil
}

// build builds etcd from module dir into bin, through a temporary file,
// so that an interrupted build leaves no binary behind.
func build(dir, bin string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	tmp := bin + ".building"
	work, err := os.MkdirTemp("", "etcdbuild-overlay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	overlay, err := writeOverlay(dir, work)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-overlay", overlay, "-o", tmp, "go.etcd.io/etcd/server/v3")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stdout, os.Stderr
	// Its own go.mod, whatever GOFLAGS or GOWORK the caller has.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, bin)
}
