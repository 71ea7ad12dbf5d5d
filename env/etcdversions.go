package env

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// EtcdBuilds are the etcd versions `make test-deps` builds from the Go
// module proxy, beside Debian's etcd-server (3.4.23 on bookworm), which
// stays the default. Each is built from its module under env/etcdbuild
// (VERSION/go.mod requires go.etcd.io/etcd/server/v3 at that version, whose
// root package is etcd's main) into EtcdBuildDir.
var EtcdBuilds = []string{"3.6.17", "3.7.3"}

// EtcdBuildDir is where the built etcd binaries are kept, VERSION/etcd
// each: locksim/etcd under the user's cache dir (~/.cache/locksim/etcd).
func EtcdBuildDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the etcd builds' folder: %w", err)
	}
	return filepath.Join(dir, "locksim", "etcd"), nil
}

// EtcdBuilt is where etcd version v's built binary is kept.
func EtcdBuilt(v string) (string, error) {
	dir, err := EtcdBuildDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, v, "etcd"), nil
}

// EtcdBinary finds the binary of etcd version v: "" is Debian's, the
// default, and so is its own version; any other is one of EtcdBuilds,
// built. The error for a version not here names those that are and how to
// build the others.
func EtcdBinary(v string) (string, error) {
	deb, debErr := etcdPath()
	if v == "" {
		return deb, debErr
	}
	if debErr == nil {
		if dv, err := EtcdVersion(deb); err == nil && dv == v {
			return deb, nil
		}
	}
	if slices.Contains(EtcdBuilds, v) {
		if p, err := EtcdBuilt(v); err == nil && isFile(p) {
			return p, nil
		}
	}
	dir, _ := EtcdBuildDir()
	have := "none"
	if vs := EtcdVersions(); len(vs) > 0 {
		have = strings.Join(vs, ", ")
	}
	return "", fmt.Errorf("no etcd %s here (here: %s); make test-deps builds etcd %s from the Go module proxy into %s, 4 to 7 minutes each on a busy 2-core machine",
		v, have, strings.Join(EtcdBuilds, " and "), dir)
}

// EtcdVersions lists the etcd versions to be had here: Debian's (the
// default) first, then those of EtcdBuilds that are built.
func EtcdVersions() []string {
	var out []string
	if deb, err := etcdPath(); err == nil {
		if v, err := EtcdVersion(deb); err == nil {
			out = append(out, v)
		}
	}
	for _, v := range EtcdBuilds {
		if p, err := EtcdBuilt(v); err == nil && isFile(p) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// etcdVersions caches EtcdVersion by binary: a binary's version does not
// change while the harness runs.
var etcdVersions sync.Map

// EtcdVersion is the version the etcd binary at bin says it is ("3.7.3",
// from its first line, "etcd Version: 3.7.3").
func EtcdVersion(bin string) (string, error) {
	if v, ok := etcdVersions.Load(bin); ok {
		return v.(string), nil
	}
	// Output, not a pipe cut short: etcd writes several lines.
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "etcd Version:")
	if !ok {
		return "", fmt.Errorf("%s --version: %q, expected etcd Version: X", bin, first)
	}
	v = strings.TrimSpace(v)
	etcdVersions.Store(bin, v)
	return v, nil
}

// EtcdClockHook is the version of locksim's clock hook that the etcd
// builds of EtcdBuilds carry (env/etcdbuild/runtime_clock.go.txt, put into
// their Go runtime by go build -overlay): their time.Now and timers read
// the clock shim's control file named by clockshim.EnvFile, so a clock
// fault reaches them. etcdbuild writes it into EtcdHookMarker(v) beside
// the binary; a build without it, or with another, is built again.
const EtcdClockHook = "1"

// EtcdHookMarker is the file beside version v's built binary that names
// the clock hook it carries.
func EtcdHookMarker(v string) (string, error) {
	bin, err := EtcdBuilt(v)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(bin), "clockhook"), nil
}

// EtcdClockless says why no clock fault reaches the etcd binary bin ("":
// one does): Debian's reads the clock through the vDSO, out of the clock
// shim's reach; a build of make test-deps carries the clock hook unless it
// was built before it.
func EtcdClockless(bin string) string {
	for _, v := range EtcdBuilds {
		if p, err := EtcdBuilt(v); err != nil || p != bin {
			continue
		}
		m, _ := EtcdHookMarker(v)
		if got, err := os.ReadFile(m); err == nil && strings.TrimSpace(string(got)) == EtcdClockHook {
			return ""
		}
		return fmt.Sprintf("etcd %s was built without locksim's clock hook %s: make test-deps builds it again", v, EtcdClockHook)
	}
	return fmt.Sprintf("no clock fault reaches an etcd member run by %s: a Go binary reads the clock through the vDSO, out of the clock shim's reach; the etcd builds of make test-deps (%s) carry locksim's clock hook", bin, strings.Join(EtcdBuilds, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
