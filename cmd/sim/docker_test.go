package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"locksim/env"
)

// TestCatalogueDocker plays stories of every kind of fault on the docker
// backend, each with its counterfactual: the verdicts must be the ones
// TestCatalogue requires of local processes, the run must name its
// images, and no container may outlive it.
func TestCatalogueDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, img := range []string{env.DefaultRedisImage, env.DefaultPostgresImage, env.DefaultEtcdImage} {
		if err := env.CheckImage(ctx, img); err != nil {
			t.Fatalf("%v (make test runs make docker first)", err)
		}
	}
	for _, tc := range []struct{ name, image string }{
		{"redlock-clock-jump", "redis"},          // the clock shim in a container
		{"redlock-pause-after-acquire", "redis"}, // a client's pause against containers
		{"redlock-crash-restart", "redis"},       // kill -9 of a container, a new one on the same dir
		{"redis-failover", "redis"},              // a replica in a container promoted
		{"postgres-connection-drop", "postgres"}, // toxiproxy in front of PostgreSQL in a container
		{"etcd-member-crash", "etcd"},            // etcd members in containers
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := playWithCounterfactual(t, tc.name, "--backend", "docker")
			images, _ := r["images"].(map[string]any)
			if r["backend"] != "docker" || images[tc.image] == nil {
				t.Fatalf("result.json: backend %v, images %v; want docker and a %s image", r["backend"], r["images"], tc.image)
			}
			t.Logf("%s on docker: %v; counterfactual %v", tc.name, r["verdict"], r["counterfactual"].(map[string]any)["verdict"])
		})
	}
	if n := env.ContainerCount(); n != 0 {
		t.Fatalf("%d container(s) still registered after the runs", n)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if left, err := env.OwnContainers(ctx); err != nil || len(left) != 0 {
		t.Fatalf("containers the engine still holds after the runs: %v, %v", left, err)
	}
}

// TestLocalOnlyBackendRefusedOnDocker: a story whose servers have no
// docker image (ZooKeeper, Sentinel) is refused on the docker host in
// one line, before any server or container starts.
func TestLocalOnlyBackendRefusedOnDocker(t *testing.T) {
	for _, name := range []string{"zookeeper-pause", "redis-sentinel-failover"} {
		code, _, errOut := sim(t, "run", name, "--backend", "docker", "-q", "--out", t.TempDir())
		if code != 2 || !strings.Contains(errOut, "has no image") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s on docker: exit %d, stderr %q; want 2 and one line saying it has no image", name, code, errOut)
		}
	}
}
