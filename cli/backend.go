package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
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
}

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
	if h.Name == "local" && len(h.Images) > 0 {
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
	return nil
}
