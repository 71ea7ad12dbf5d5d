package cli

import (
	"context"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
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
	for _, img := range []string{env.DefaultRedisImage, env.DefaultPostgresImage, env.DefaultEtcdImage,
		env.DefaultZooKeeperImage, env.DefaultSentinelImage} {
		if err := env.CheckImage(ctx, img); err != nil {
			t.Fatalf("%v (make test runs make docker first)", err)
		}
	}
	for _, tc := range []struct {
		name  string
		image string   // the lock backend's image the record names
		also  []string // and the images of the servers it includes
	}{
		{"redlock-clock-jump", "redis", nil},          // the clock shim in a container
		{"redlock-pause-after-acquire", "redis", nil}, // a client's pause against containers
		{"redlock-crash-restart", "redis", nil},       // kill -9 of a container, a new one on the same dir
		{"redis-failover", "redis", nil},              // a replica in a container promoted
		{"postgres-connection-drop", "postgres", nil}, // toxiproxy in front of PostgreSQL in a container
		{"etcd-member-crash", "etcd", nil},            // etcd members in containers
		{"zookeeper-pause", "zookeeper", nil},         // a ZooKeeper member's JVM in a container
		{"zookeeper-member-crash", "zookeeper", nil},  // three members, one removed by force and restarted
		// The sentinels in the Sentinel image, the primary and its
		// replica in the Redis image; the real election in containers.
		{"redis-sentinel-failover", "sentinel", []string{"redis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := playWithCounterfactual(t, tc.name, "--backend", "docker")
			images, _ := r["images"].(map[string]any)
			if r["backend"] != "docker" || images[tc.image] == nil {
				t.Fatalf("result.json: backend %v, images %v; want docker and a %s image", r["backend"], r["images"], tc.image)
			}
			for _, b := range tc.also {
				if images[b] == nil {
					t.Fatalf("result.json: images %v; want a %s image too", r["images"], b)
				}
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
