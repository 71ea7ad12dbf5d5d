package main

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"locksim/env"
	"locksim/runner"
	"locksim/scenarios"
)

// backendFlags adds --backend and the docker backend's image flags.
func backendFlags(f *pflag.FlagSet, b *runner.Backend) {
	f.StringVar(&b.Name, "backend", "", "where the servers run: `local` child processes or docker containers (make docker readies the engine and the default images; DOCKER_HOST may name another engine on this machine) (default: the scenario's backend field, else local)")
	f.StringVar(&b.RedisImage, "redis-image", "", "the docker backend's Redis `IMAGE`: a glibc-based image with redis-server on its PATH, e.g. redis:7.2-bookworm or valkey/valkey:8 (default "+env.DefaultRedisImage+")")
	f.StringVar(&b.PostgresImage, "postgres-image", "", "the docker backend's PostgreSQL `IMAGE`: initdb and postgres on its PATH and a postgres user, e.g. postgres:17 (default "+env.DefaultPostgresImage+")")
	f.StringVar(&b.EtcdImage, "etcd-image", "", "the docker backend's etcd `IMAGE`, etcd on its PATH (default "+env.DefaultEtcdImage+")")
}

// checkBackend checks the backend flags: a known backend, and images only
// with docker.
func checkBackend(b runner.Backend) error {
	if !slices.Contains(scenarios.ServerBackends, b.Name) {
		return fmt.Errorf("--backend: expected local or docker, got %q", b.Name)
	}
	if b.Name == "local" && (b.RedisImage != "" || b.PostgresImage != "" || b.EtcdImage != "") {
		return fmt.Errorf("--redis-image, --postgres-image and --etcd-image name containers' images: they need --backend docker")
	}
	return nil
}
