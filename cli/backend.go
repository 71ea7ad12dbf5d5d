package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// backendFlags adds --backend (the host: where the servers run) and, for
// each lock backend, the docker host's --NAME-image flag.
func backendFlags(f *pflag.FlagSet, h *runner.Host) {
	f.StringVar(&h.Name, "backend", "", "where the servers run: `local` child processes or docker containers (make docker readies the engine and the default images; DOCKER_HOST may name another engine on this machine) (default: the scenario's backend field, else local)")
	if h.Images == nil {
		h.Images = map[clients.Backend]string{}
	}
	for _, b := range backends.All() {
		def, doc := b.Image()
		if def == "" {
			continue // its servers run on the local backend only
		}
		f.Var(imageFlag{h.Images, b.Name()}, imageFlagName(b), "the docker backend's "+doc+" (default "+def+")")
	}
	if h.Versions == nil {
		h.Versions = map[clients.Backend]string{}
	}
	f.Var(versionFlag(h.Versions), "server-version", "run this version of a backend's servers on the local backend (`BACKEND=VERSION`, e.g. etcd=3.7.3; make test-deps builds etcd "+strings.Join(env.EtcdBuilds, " and ")+" beside Debian's 3.4.23, the default); the run records it")
}

// versionFlag is --server-version: BACKEND=VERSION, repeated or joined
// by commas.
type versionFlag map[clients.Backend]string

func (f versionFlag) String() string {
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, string(b)+"="+f[b])
	}
	return strings.Join(parts, ",")
}

func (f versionFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		b, v, ok := strings.Cut(part, "=")
		if !ok || b == "" || v == "" {
			return valueError(fmt.Sprintf("expected BACKEND=VERSION (etcd=3.7.3), got %q", part))
		}
		f[clients.Backend(b)] = v
	}
	return nil
}

func (versionFlag) Type() string { return "string" }

// valueError is a flag value's own error, which the usage line gives
// whole instead of "parse error".
type valueError string

func (e valueError) Error() string { return string(e) }

func imageFlagName(b backends.Backend) string { return string(b.Name()) + "-image" }

// imageFlag is a --NAME-image flag: it sets the image of one backend.
type imageFlag struct {
	images  map[clients.Backend]string
	backend clients.Backend
}

func (f imageFlag) String() string {
	if f.images == nil {
		return ""
	}
	return f.images[f.backend]
}

func (f imageFlag) Set(s string) error {
	if s == "" {
		delete(f.images, f.backend)
	} else {
		f.images[f.backend] = s
	}
	return nil
}

func (imageFlag) Type() string { return "string" }

// checkBackend checks the host flags: a known host, and images only with
// docker.
func checkBackend(h runner.Host) error {
	if !slices.Contains(scenarios.ServerBackends, h.Name) {
		return fmt.Errorf("--backend: expected local or docker, got %q", h.Name)
	}
	if h.Name == env.HostLocal && len(h.Images) > 0 {
		var names []string
		for _, b := range backends.All() {
			names = append(names, "--"+imageFlagName(b))
		}
		list := names[len(names)-1]
		if len(names) > 1 {
			list = strings.Join(names[:len(names)-1], ", ") + " and " + list
		}
		return fmt.Errorf("%s name containers' images: they need --backend docker", list)
	}
	if err := h.CheckVersions(); err != nil {
		return fmt.Errorf("--server-version %v", err)
	}
	return nil
}
