package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/storage"
)

// Host says where a run's servers run: the scenario's backend field, or
// sim's --backend (local or docker). Not to be confused with a lock's
// backend (package backends), the servers it runs on.
type Host struct {
	// Name is "local" (child processes on this machine; the default) or
	// "docker" (containers through testcontainers-go). Empty takes the
	// scenario's backend field, then local.
	Name string
	// Images name the docker host's image for each lock backend's
	// servers; one not named is the backend's default (built by `make
	// docker`).
	Images map[clients.Backend]string
	// Versions name the version of a lock backend's local servers to run
	// (backends.Versioned: etcd's "3.7.3"); one not named runs its
	// default. Not on the docker host, whose images say what runs.
	Versions map[clients.Backend]string
}

// CheckVersions refuses a version h cannot run: on the docker host, for
// a backend whose servers come in one version, or one not to be had here
// (the error names those that are). Each error starts "BACKEND=VERSION:".
func (h Host) CheckVersions() error {
	for _, name := range slices.Sorted(maps.Keys(h.Versions)) {
		v := h.Versions[name]
		b, _ := backends.Lookup(name)
		vb, ok := b.(backends.Versioned)
		switch {
		case !ok:
			var some []string
			for _, b := range backends.All() {
				if _, ok := b.(backends.Versioned); ok {
					some = append(some, string(b.Name()))
				}
			}
			return fmt.Errorf("%s=%s: %s's servers come in one version here; a version is chosen for %s only", name, v, name, strings.Join(some, ", "))
		case h.Name == env.HostDocker:
			return fmt.Errorf("%s=%s: the docker backend runs the etcd of its image (--%s-image); a version is chosen on the local backend", name, v, name)
		}
		if _, err := vb.Version(v); err != nil {
			return fmt.Errorf("%s=%s: %v", name, v, err)
		}
	}
	return nil
}

// clockedFor is h for a run of sc: where sc moves a server's clock and
// the lock's backend has versions no clock fault reaches
// (backends.ClockVersioned: Debian's etcd), the version asked must be one
// it reaches, and with none asked it is the newest one that is, so that a
// clock fault never falls on a server that does not feel it.
func (h Host) clockedFor(sc *scenarios.Scenario) (Host, error) {
	if !sc.ClockOnNode() {
		return h, nil
	}
	spec, err := clients.Lookup(sc.Lock)
	if err != nil {
		return h, nil // versionsOf names it
	}
	b := backends.Of(spec)
	cv, ok := b.(backends.ClockVersioned)
	if !ok {
		return h, nil
	}
	if hostFor(sc, h).Name == env.HostDocker {
		return h, fmt.Errorf("%s moves a member's clock, and the docker backend's %s image runs Debian's %s, which no clock fault reaches: play it on the local backend",
			sc.Name, b.Name(), b.Name())
	}
	if v := h.Versions[b.Name()]; v != "" {
		if why := cv.ClocklessIn(v); why != "" {
			return h, fmt.Errorf("%s=%s: %s moves a member's clock: %s", b.Name(), v, sc.Name, why)
		}
		return h, nil
	}
	v, err := cv.ClockedVersion()
	if err != nil {
		return h, fmt.Errorf("%s moves a member's clock: %v", sc.Name, err)
	}
	h.Versions = maps.Clone(h.Versions)
	if h.Versions == nil {
		h.Versions = map[clients.Backend]string{}
	}
	h.Versions[b.Name()] = v
	return h, nil
}

// versionsOf are the versions of sc's servers that come in several
// (backends.Versioned), by backend, as host h runs them: those it names,
// else each one's default; none on the docker host.
func (h Host) versionsOf(sc *scenarios.Scenario) (map[string]string, error) {
	if hostFor(sc, h).Name == env.HostDocker {
		return nil, nil
	}
	spec, err := clients.Lookup(sc.Lock)
	if err != nil {
		return nil, err
	}
	var out map[string]string
	for _, b := range planServers(sc, spec) {
		vb, ok := b.(backends.Versioned)
		if !ok {
			continue
		}
		v, err := vb.Version(h.Versions[b.Name()])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[string(b.Name())] = v
	}
	return out, nil
}

// host is the run's host, its name filled in.
func (r *run) host() Host { return hostFor(r.sc, r.o.Host) }

// hostFor is host h of a run of sc, its name filled in: h's, else the
// scenario's backend field, else local.
func hostFor(sc *scenarios.Scenario, h Host) Host {
	if h.Name == "" {
		h.Name = sc.ServerBackend
	}
	if h.Name == "" {
		h.Name = env.HostLocal
	}
	return h
}

// image is the image b's servers run in: "" on the local host.
func (h Host) image(b backends.Backend) string {
	if h.Name != env.HostDocker {
		return ""
	}
	if img := h.Images[b.Name()]; img != "" {
		return img
	}
	def, _ := b.Image()
	return def
}

// imagesOf are the images on host h of the backends whose servers b
// starts among its own (backends.Includes), by backend; nil for none (and
// on the local host).
func (h Host) imagesOf(b backends.Backend) map[clients.Backend]string {
	var out map[clients.Backend]string
	for _, name := range backends.Includes(b) {
		inc, ok := backends.Lookup(name)
		if !ok || h.image(inc) == "" {
			continue
		}
		if out == nil {
			out = map[clients.Backend]string{}
		}
		out[name] = h.image(inc)
	}
	return out
}

// planServers lists the backends whose servers sc starts, in order: the
// lock's (spec); PostgreSQL for the protected storage or a postgres
// fence; and Redis for the nodes of a lock whose backend does not count
// them (a Redis fence's).
func planServers(sc *scenarios.Scenario, spec clients.Spec) []backends.Backend {
	lock := backends.Of(spec)
	plan := []backends.Backend{lock}
	add := func(name clients.Backend) {
		if b, ok := backends.Lookup(name); ok && !slices.Contains(plan, b) {
			plan = append(plan, b)
		}
	}
	if sc.Storage != "" || clients.FenceBackend(sc.Fence) == clients.PostgresBackend {
		add(clients.PostgresBackend)
	}
	if sc.Nodes > 0 && lock.Nodes(spec) == 0 {
		add(clients.RedisBackend)
	}
	return plan
}

// checkHost refuses, before any server starts, a host the run cannot
// have: an unknown name, no engine, an image that is not there.
func (r *run) checkHost(ctx context.Context, plan []backends.Backend) error {
	h := r.host()
	if err := h.CheckVersions(); err != nil {
		return harness("server version %v", err)
	}
	switch h.Name {
	case env.HostLocal:
		return nil
	case env.HostDocker:
	default:
		return harness("backend %q: expected local or docker", h.Name)
	}
	for _, b := range plan {
		need := []backends.Backend{b}
		for _, name := range backends.Includes(b) {
			if inc, ok := backends.Lookup(name); ok {
				need = append(need, inc)
			}
		}
		for _, b := range need {
			if h.image(b) == "" {
				return harness("the docker backend has no image for %s's servers: run this story on the local backend", b.Name())
			}
			if err := env.CheckImage(ctx, h.image(b)); err != nil {
				return harness("%v", err)
			}
		}
	}
	if reaped, err := env.ReapContainers(ctx); err != nil {
		return harness("%v", err)
	} else if len(reaped) > 0 {
		r.say("removed %d container(s) left by a harness that died: %s", len(reaped), strings.Join(reaped, ", "))
	}
	return nil
}

// started are one backend's servers of the run.
type started struct {
	backend backends.Backend
	backends.Servers
}

// startServers starts the planned backends' servers at once, their
// files in dir and their own links in network, and the storage's tables
// in the PostgreSQL among them, which it returns too (nil if none).
func (r *run) startServers(ctx context.Context, plan []backends.Backend, dir string, network *env.Network) ([]started, *env.Postgres, error) {
	h := r.host()
	o := r.sc.ServerOptions()
	o.Dir, o.Network = dir, network
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	out := make([]started, len(plan))
	for i, b := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := o
			o.Image, o.Images = h.image(b), h.imagesOf(b)
			if o.Image == "" {
				o.Version = h.Versions[b.Name()]
			}
			s, err := b.Start(ctx, o)
			if err == nil {
				out[i] = started{b, s}
				if pg := backends.PostgresOf(s); pg != nil {
					err = storage.Setup(ctx, pg.DSN(pg.Addr()))
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var (
		servers []started
		pg      *env.Postgres
	)
	for _, s := range out {
		if s.Servers == nil {
			continue
		}
		servers = append(servers, s)
		if p := backends.PostgresOf(s.Servers); p != nil {
			pg = p
		}
	}
	if len(errs) > 0 {
		closeAll(servers)
		return nil, nil, harness("starting servers: %v", errors.Join(errs...))
	}
	return servers, pg, nil
}

// useServers makes servers the run's, and what its faults may touch.
func (r *run) useServers(servers []started, pg *env.Postgres) {
	r.servers, r.storage = servers, pg
	for _, s := range servers {
		s.Target(r.target)
	}
}

// closeServers stops every server of the run at once, unless they are
// kept for the next run (Options.Keep). r.servers stays, for the record
// (images).
func (r *run) closeServers() {
	if r.o.Keep == nil {
		closeAll(r.servers)
	}
}

// resetServers resets servers (backends.Servers.Reset: a Redis node
// flushed with its clock back to real time) and, when set, the storage
// (resetStorage), all at once.
func resetServers(ctx context.Context, servers []started, resetStorage func() error) error {
	resets := make([]func() error, 0, len(servers)+1)
	for _, s := range servers {
		resets = append(resets, func() error { return s.Reset(ctx) })
	}
	if resetStorage != nil {
		resets = append(resets, resetStorage)
	}
	errs := make([]error, len(resets))
	var wg sync.WaitGroup
	for i, reset := range resets {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = reset() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeAll stops servers at once.
func closeAll(servers []started) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
}

// images are the container images the run's servers ran in, by lock
// backend ("redis": its image); nil on the local host.
func (r *run) images() map[string]string {
	h := r.host()
	if h.Name != env.HostDocker {
		return nil
	}
	out := map[string]string{}
	for _, s := range r.servers {
		out[string(s.backend.Name())] = h.image(s.backend)
		for name, img := range h.imagesOf(s.backend) {
			out[string(name)] = img
		}
	}
	return out
}

// where says, on the docker host, where the servers run, for the
// environment line ("" for local processes).
func (r *run) where() string {
	h := r.host()
	if h.Name != env.HostDocker {
		return ""
	}
	var parts []string
	for _, s := range r.servers {
		parts = append(parts, h.image(s.backend))
		for _, name := range backends.Includes(s.backend) {
			if img := h.imagesOf(s.backend)[name]; img != "" && !slices.Contains(parts, img) {
				parts = append(parts, img)
			}
		}
	}
	return "; servers in containers of " + strings.Join(parts, ", ")
}
