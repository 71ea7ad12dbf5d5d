package backends

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
)

// redisBackend is the scenario's Redis nodes, A, B, C..., each a
// redis-server under the clock shim, with an asynchronous replica each
// when the scenario asks (failover). A Redis fence source counts on them
// too, whatever the lock.
type redisBackend struct{}

func init() { Register(redisBackend{}) }

func (redisBackend) Name() clients.Backend { return clients.RedisBackend }

func (redisBackend) Nodes(spec clients.Spec) int { return clustered(spec) }

func (redisBackend) Check(Options) *FieldError { return nil }

func (redisBackend) Settings() Settings { return RedisSettings{} }

// RedisSettings are a story's settings for its Redis nodes.
type RedisSettings struct {
	// Persistence is how the Redis nodes keep data across a crash: none
	// (default), everysec or always (AOF fsync policy).
	Persistence string `yaml:"persistence"`
	// Replicas gives every Redis node an asynchronous replica, for failover.
	Replicas bool `yaml:"replicas"`
}

// PersistenceModes are the values of RedisSettings.Persistence ("" is none).
var PersistenceModes = []string{"", "none", "everysec", "always"}

// Check refuses a persistence Redis does not have.
func (s RedisSettings) Check() *FieldError {
	if !slices.Contains(PersistenceModes, s.Persistence) {
		return &FieldError{"persistence", fmt.Sprintf("expected none, everysec or always, got %q", s.Persistence)}
	}
	return nil
}

// Replicated says whether every node has a replica.
func (s RedisSettings) Replicated() bool { return s.Replicas }

// Persistent says whether the nodes keep an append-only file (everysec
// or always).
func (s RedisSettings) Persistent() bool {
	return s.Persistence == "everysec" || s.Persistence == "always"
}

// JSONSchemaExtend lists persistence's values in the schema.
func (RedisSettings) JSONSchemaExtend(js *jsonschema.Schema) {
	schemaEnum(js, "persistence", PersistenceModes)
}

func (redisBackend) NodeClockless() string { return "" }

func (redisBackend) Shape(nodes int, ttl time.Duration) (string, string) {
	return fmt.Sprintf("%d Redis node(s)", nodes), fmt.Sprintf("TTL %v", ttl)
}

func (redisBackend) Image() (string, string) {
	return env.DefaultRedisImage, "Redis `IMAGE`: a glibc-based image with redis-server on its PATH, e.g. redis:7.2-bookworm or valkey/valkey:8"
}

func (redisBackend) Start(ctx context.Context, o Options) (Servers, error) {
	set := SettingsOf[RedisSettings](o)
	s := &redisServers{nodes: make([]*env.Redis, o.Nodes)}
	err := startEach(o.Nodes, func(i int) error {
		var err error
		s.nodes[i], err = env.StartRedis(ctx, env.RedisOptions{Name: NodeName(i), Dir: o.Dir, Persistence: env.Persistence(set.Persistence), Image: o.Image})
		return err
	})
	if err == nil && set.Replicas {
		err = s.startReplicas(ctx, o)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// redisServers are a run's Redis nodes and their replicas.
type redisServers struct {
	nodes    []*env.Redis
	replicas []*env.Redis // by node, when the scenario has replicas
}

// startReplicas gives every node an asynchronous replica that replicates
// through its own proxy ("client 0"'s link to the node), so the story can
// hold replication back.
func (s *redisServers) startReplicas(ctx context.Context, o Options) error {
	for _, n := range s.nodes {
		l, err := o.Network.AddLink(env.LinkName(0, n.Name), n.Addr)
		if err != nil {
			return err
		}
		rep, err := env.StartRedis(ctx, env.RedisOptions{Name: n.Name + "-replica", Dir: o.Dir, ReplicaOf: l.Listen, Image: o.Image})
		if err != nil {
			return fmt.Errorf("starting the replica of %s: %v", n.Name, err)
		}
		s.replicas = append(s.replicas, rep)
	}
	return s.waitReplicated(ctx)
}

// waitReplicated waits until every replica reports its link to the
// primary up, so a story starts with replication running.
func (s *redisServers) waitReplicated(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for i, rep := range s.replicas {
		for {
			info, err := rep.Client().Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the replica of %s did not sync within 5s: %v", s.nodes[i].Name, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func (s *redisServers) Target(t *nemesis.Target) {
	for i, n := range s.nodes {
		t.Redis[n.Name] = n
		if i < len(s.replicas) {
			t.Replicas[n.Name] = s.replicas[i]
		}
	}
}

func (s *redisServers) Connect(cfg *clients.Config, link Link) error {
	return connectEach(cfg, link, clients.RedisBackend, s.nodes, func(n *env.Redis) (string, string) { return n.Name, n.Addr })
}

func (s *redisServers) Describe() string {
	return fmt.Sprintf("%d Redis %snode(s)", len(s.nodes), versioned(env.RedisVersion()))
}

// versioned is "V " for a known version v, "" for an unknown one.
func versioned(v string) string {
	if v == "" {
		return ""
	}
	return v + " "
}

// Reset flushes every node (its replica follows) and puts its clock back
// to real time.
func (s *redisServers) Reset(ctx context.Context) error {
	return startEach(len(s.nodes), func(i int) error { return s.nodes[i].Reset(ctx) })
}

func (s *redisServers) Close() {
	all := append(append([]*env.Redis{}, s.nodes...), s.replicas...)
	closeEach(len(all), func(i int) {
		if all[i] != nil {
			_ = all[i].Close()
		}
	})
}
