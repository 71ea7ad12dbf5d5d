package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runtimeClock is the Go file the overlay adds to the runtime: locksim's
// clock hook (env.EtcdClockHook).
//
//go:embed runtime_clock.go.txt
var runtimeClock []byte

// runtimePatch is one change to a file of the Go runtime: Old, found
// exactly once, becomes New.
type runtimePatch struct{ File, Old, New string }

// runtimePatches route the runtime's clock readings and timed waits
// through runtime_clock.go.txt (linux/amd64): its time.now and nanotime1
// take the names of the vDSO readings they wrap, and the waits convert
// their durations.
var runtimePatches = []runtimePatch{
	{"time_linux_amd64.s", "TEXT time·now<ABIInternal>(SB)", "TEXT runtime·timeNowVDSO<ABIInternal>(SB)"},
	{"sys_linux_amd64.s", "TEXT runtime·nanotime1(SB)", "TEXT runtime·nanotime1VDSO(SB)"},
	{"timeasm.go", "//go:build !faketime && (windows || (linux && amd64))", "//go:build !faketime && windows"},
	{"stubs3.go", "//go:build !aix && !darwin && !freebsd && !openbsd && !plan9 && !solaris && !wasip1\n",
		"//go:build !aix && !darwin && !freebsd && !openbsd && !plan9 && !solaris && !wasip1 && !(linux && amd64)\n"},
	{"netpoll_epoll.go", "func netpoll(delay int64) (gList, int32) {\n",
		"func netpoll(delay int64) (gList, int32) {\n\tdelay = locksimRealWait(delay)\n"},
	{"os_linux.go", "\tvar ts timespec\n\tts.setNsec(ns)\n\tfutex(unsafe.Pointer(addr), _FUTEX_WAIT_PRIVATE, val, &ts, nil, 0)\n",
		"\tns = locksimRealWait(ns)\n\tvar ts timespec\n\tts.setNsec(ns)\n\tfutex(unsafe.Pointer(addr), _FUTEX_WAIT_PRIVATE, val, &ts, nil, 0)\n"},
}

// writeOverlay writes, into dir, the runtime files patched and the hook,
// and the overlay file go build -overlay reads, for the Go toolchain that
// builds module mod; it returns the overlay file's path. A patch whose
// text this toolchain's runtime lacks is an error: the hook is not built
// in silently.
func writeOverlay(mod, dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	rt := filepath.Join(strings.TrimSpace(string(out)), "src", "runtime")
	replace := map[string]string{}
	for _, p := range runtimePatches {
		src, err := os.ReadFile(filepath.Join(rt, p.File))
		if err != nil {
			return "", fmt.Errorf("the clock hook: %w", err)
		}
		if n := strings.Count(string(src), p.Old); n != 1 {
			return "", fmt.Errorf("the clock hook: runtime/%s has %q %d times, expected once: this Go's runtime is not the one the hook was written for", p.File, p.Old, n)
		}
		dst := filepath.Join(dir, p.File)
		if err := os.WriteFile(dst, []byte(strings.Replace(string(src), p.Old, p.New, 1)), 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(rt, p.File)] = dst
	}
	hook := filepath.Join(dir, "locksim_clock_linux_amd64.go")
	if err := os.WriteFile(hook, runtimeClock, 0o644); err != nil {
		return "", err
	}
	replace[filepath.Join(rt, "locksim_clock_linux_amd64.go")] = hook
	js, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, js, 0o644)
}
