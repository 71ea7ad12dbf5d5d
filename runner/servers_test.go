package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/scenarios"
)

// noImage is a lock backend without a docker image (every registered one
// has one now): the etcd backend with Image returning nothing.
type noImage struct{ backends.Backend }

func (noImage) Image() (string, string) { return "", "" }

// A backend without an image is refused on the docker host in one line,
// before any engine is asked or server started; on the local host it is
// not.
func TestCheckHostRefusesBackendWithoutImage(t *testing.T) {
	etcd, ok := backends.Lookup(clients.EtcdBackend)
	if !ok {
		t.Fatal("no etcd backend")
	}
	plan := []backends.Backend{noImage{etcd}}
	r := &run{sc: &scenarios.Scenario{}, o: Options{Host: Host{Name: "docker"}}}
	err := r.checkHost(context.Background(), plan)
	var he *HarnessError
	if err == nil || !strings.Contains(err.Error(), "has no image for etcd's servers") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("docker host: %v; want one line saying etcd's servers have no image", err)
	}
	if !errors.As(err, &he) {
		t.Fatalf("%T, want a HarnessError", err)
	}
	r.o.Host.Name = "local"
	if err := r.checkHost(context.Background(), plan); err != nil {
		t.Fatalf("local host: %v", err)
	}
}

// An included backend's image (Sentinel's Redis) is the host's image of
// that backend, named or default; none on the local host.
func TestImagesOfIncludedBackends(t *testing.T) {
	sentinel, ok := backends.Lookup(clients.SentinelBackend)
	if !ok {
		t.Fatal("no sentinel backend")
	}
	if got := (Host{Name: "local"}).imagesOf(sentinel); got != nil {
		t.Fatalf("local host: %v", got)
	}
	h := Host{Name: "docker"}
	redisDef, _ := backends.Lookup(clients.RedisBackend)
	def, _ := redisDef.Image()
	if got := h.imagesOf(sentinel); len(got) != 1 || got[clients.RedisBackend] != def {
		t.Fatalf("docker host: %v; want redis: %s", got, def)
	}
	h.Images = map[clients.Backend]string{clients.RedisBackend: "valkey/valkey:8", clients.SentinelBackend: "redis:7.2-bookworm"}
	if got := h.imagesOf(sentinel); got[clients.RedisBackend] != "valkey/valkey:8" {
		t.Fatalf("named Redis image: %v", got)
	}
	if got := h.image(sentinel); got != "redis:7.2-bookworm" {
		t.Fatalf("named Sentinel image: %v", got)
	}
}
