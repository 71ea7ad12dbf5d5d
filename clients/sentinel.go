package clients

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// SentinelBackend is a Redis primary with its replica, watched by Redis
// Sentinel: the sentinels are in Config.Servers[SentinelBackend], the
// primary and its replica (A, A-replica, each with its own address as
// Upstream) in Config.Servers[RedisBackend].
const SentinelBackend Backend = "sentinel"

// SentinelMaster is the name the sentinels monitor the primary by.
const SentinelMaster = "locksim"

func init() {
	Register(Spec{Name: "redis-sentinel", Backend: SentinelBackend, PlainExpire: true,
		Promises: redisSentinelPromises,
		Doc:      "single Redis found through Redis Sentinel (go-redis's failover client): SET NX PX on whichever node the sentinels name primary",
		New:      func(cfg Config) (Lock, error) { return NewSentinelLock(cfg) }})
}

// NewSentinelLock is the single-node Redis lock (NewSingleRedis) on the primary the
// sentinels name: go-redis's failover client asks the sentinels (through
// this client's proxies to them) for the primary, and dials it through
// this client's proxy to that node, so faults on a client's links reach
// it; after a failover it asks again and follows the new primary. The
// lock's node is called A whichever server is primary.
func NewSentinelLock(cfg Config) (*Redlock, error) {
	var sentinels []string
	for _, n := range cfg.Servers[SentinelBackend] {
		sentinels = append(sentinels, n.Addr)
	}
	if len(sentinels) == 0 || len(cfg.Servers[RedisBackend]) == 0 {
		return nil, errors.New("redis-sentinel: no sentinels or no Redis nodes configured")
	}
	proxy := map[string]string{}
	for _, n := range cfg.Servers[RedisBackend] {
		if n.Upstream != "" {
			proxy[n.Upstream] = n.Addr
		}
	}
	timeout := cfg.Timeout()
	var d net.Dialer
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    SentinelMaster,
		SentinelAddrs: sentinels,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p, ok := proxy[addr]; ok {
				addr = p
			}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return arrivedConn{c}, nil
		},
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		MaxRetries:            -1,
		PoolSize:              2,
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
	})
	// The single-instance pattern, as lock redis: no validity check at
	// acquire.
	return &Redlock{timeout: timeout, nodes: []redisNode{{name: "A", client: client}}, noValidity: true}, nil
}
