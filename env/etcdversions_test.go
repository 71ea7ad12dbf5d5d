package env

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEtcdBuildsHaveTheirModules: each version make test-deps builds has
// its module under etcdbuild/, requiring etcd's server at that version,
// with the go.sum a fresh machine downloads it by; no module is left
// that EtcdBuilds does not name.
func TestEtcdBuildsHaveTheirModules(t *testing.T) {
	entries, err := os.ReadDir("etcdbuild")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	if !slices.Equal(dirs, EtcdBuilds) {
		t.Errorf("etcdbuild/ holds %v, EtcdBuilds says %v", dirs, EtcdBuilds)
	}
	for _, v := range EtcdBuilds {
		mod, err := os.ReadFile(filepath.Join("etcdbuild", v, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(mod), "go.etcd.io/etcd/server/v3 v"+v+" ") && !strings.Contains(string(mod), "go.etcd.io/etcd/server/v3 v"+v+"\n") {
			t.Errorf("etcdbuild/%s/go.mod does not require go.etcd.io/etcd/server/v3 v%s", v, v)
		}
		if sum, err := os.ReadFile(filepath.Join("etcdbuild", v, "go.sum")); err != nil || !strings.Contains(string(sum), "go.etcd.io/etcd/server/v3 v"+v+" h1:") {
			t.Errorf("etcdbuild/%s/go.sum lacks the server's sum (%v)", v, err)
		}
	}
}

// TestEtcdBinary: no version is Debian's, and a version not here is an
// error naming the versions that are and how to build the others.
func TestEtcdBinary(t *testing.T) {
	if _, err := etcdPath(); err != nil {
		t.Skip(err)
	}
	deb, err := EtcdBinary("")
	if err != nil {
		t.Fatal(err)
	}
	v, err := EtcdVersion(deb)
	if err != nil {
		t.Fatal(err)
	}
	if same, err := EtcdBinary(v); err != nil || same != deb {
		t.Errorf("EtcdBinary(%q) = %q, %v; want Debian's %s", v, same, err, deb)
	}
	if EtcdVersions()[0] != v {
		t.Errorf("EtcdVersions() = %v, want Debian's %s first", EtcdVersions(), v)
	}
	_, err = EtcdBinary("0.0.1")
	if err == nil || !strings.Contains(err.Error(), "no etcd 0.0.1 here (here: "+v) || !strings.Contains(err.Error(), "make test-deps builds etcd") {
		t.Errorf("a version not here: %v", err)
	}
}
