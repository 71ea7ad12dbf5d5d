package cli

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/env"
)

// TestServerVersionBadInput: --server-version that cannot be honoured is
// one line and exit 2 before anything starts: a version not here names
// those that are and how to build the others, a backend of one version,
// the docker backend, and a value that is not BACKEND=VERSION.
func TestServerVersionBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--server-version", "etcd=3.0.0"}, []string{"--server-version etcd=3.0.0: no etcd 3.0.0 here (here: ", "make test-deps builds etcd " + strings.Join(env.EtcdBuilds, " and ")}},
		{[]string{"--server-version", "redis=7.2"}, []string{"redis's servers come in one version here; a version is chosen for etcd only"}},
		{[]string{"--server-version", "etcd=3.7.3", "--backend", "docker"}, []string{"the docker backend runs the etcd of its image (--etcd-image)"}},
		{[]string{"--server-version", "etcd"}, []string{`invalid value "etcd" for flag --server-version: expected BACKEND=VERSION (etcd=3.7.3), got "etcd"`}},
	} {
		args := append([]string{"run", "etcd-pause"}, c.args...)
		code, out, errb := sim(t, args...)
		if code != exitHarness || out != "" || strings.Count(errb, "\n") != 1 {
			t.Errorf("sim %v: exit %d, stdout %q, stderr %q; want 2 and one line", args, code, out, errb)
		}
		for _, w := range c.want {
			if !strings.Contains(errb, w) {
				t.Errorf("sim %v: stderr %q lacks %q", args, errb, w)
			}
		}
	}
}

// TestVersionsLine: the findings page's header names the etcd versions
// here, Debian's as the default and the built ones after it.
func TestVersionsLine(t *testing.T) {
	vs := env.EtcdVersions()
	if len(vs) == 0 {
		t.Skip("no etcd here")
	}
	want := " etcd " + vs[0] + " (the default)"
	if len(vs) > 1 {
		want += ", " + strings.Join(vs[1:len(vs)-1], ", ")
		if len(vs) > 2 {
			want += " and "
		}
		want += vs[len(vs)-1] + " (built by make test-deps)"
	}
	if got := versionsLine(); got != want+"." {
		t.Errorf("versionsLine() = %q, want %q", got, want+".")
	}
}
