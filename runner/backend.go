package runner

import (
	"context"
	"strings"

	"locksim/clients"
	"locksim/env"
)

// Backend says where a run's servers run.
type Backend struct {
	// Name is "local" (child processes on this machine; the default) or
	// "docker" (containers through testcontainers-go). Empty takes the
	// scenario's backend field, then local.
	Name string
	// RedisImage, PostgresImage and EtcdImage name the docker backend's
	// images; empty takes env's defaults (built by `make docker`).
	RedisImage, PostgresImage, EtcdImage string
}

// backend is the run's backend, defaults filled in.
func (r *run) backend() Backend {
	b := r.o.Backend
	if b.Name == "" {
		b.Name = r.sc.ServerBackend
	}
	if b.Name == "" {
		b.Name = "local"
	}
	if b.Name != "docker" {
		return Backend{Name: b.Name}
	}
	b.RedisImage = orDefault(b.RedisImage, env.DefaultRedisImage)
	b.PostgresImage = orDefault(b.PostgresImage, env.DefaultPostgresImage)
	b.EtcdImage = orDefault(b.EtcdImage, env.DefaultEtcdImage)
	return b
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// checkBackend refuses, before any server starts, a backend the run
// cannot have: an unknown name, no engine, an image that is not there.
func (r *run) checkBackend(ctx context.Context, spec clients.Spec) error {
	b := r.backend()
	switch b.Name {
	case "local":
		return nil
	case "docker":
	default:
		return harness("backend %q: expected local or docker", b.Name)
	}
	var images []string
	if r.sc.Nodes > 0 && spec.Backend != "etcd" {
		images = append(images, b.RedisImage)
	}
	if spec.Backend == "etcd" {
		images = append(images, b.EtcdImage)
	}
	if r.needsPostgres(spec) {
		images = append(images, b.PostgresImage)
	}
	for _, img := range images {
		if err := env.CheckImage(ctx, img); err != nil {
			return harness("%v", err)
		}
	}
	if reaped, err := env.ReapContainers(ctx); err != nil {
		return harness("%v", err)
	} else if len(reaped) > 0 {
		r.say("removed %d container(s) left by a harness that died: %s", len(reaped), strings.Join(reaped, ", "))
	}
	return nil
}

// images are the container images the run's servers ran in, by server
// kind ("redis", "postgres", "etcd"); nil on the local backend.
func (r *run) images() map[string]string {
	b := r.backend()
	if b.Name != "docker" {
		return nil
	}
	out := map[string]string{}
	if len(r.target.Redis) > 0 {
		out["redis"] = b.RedisImage
	}
	if r.pg != nil {
		out["postgres"] = b.PostgresImage
	}
	if r.etcd != nil {
		out["etcd"] = b.EtcdImage
	}
	return out
}

// where says, on the docker backend, where the servers run, for the
// environment line ("" for local processes).
func (r *run) where() string {
	imgs := r.images()
	if imgs == nil {
		return ""
	}
	var parts []string
	for _, k := range []string{"redis", "postgres", "etcd"} {
		if img, ok := imgs[k]; ok {
			parts = append(parts, img)
		}
	}
	return "; servers in containers of " + strings.Join(parts, ", ")
}
