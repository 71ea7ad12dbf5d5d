package cost

// floor.go: the floors, one round trip to each kind of server, measured
// in the same run as the locks, so that every figure can be read as a
// multiple of what this machine does in one round trip.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locksim/locksim/clients"
)

// Floor is one round trip to a kind of server, timed as the locks are.
type Floor struct {
	// Name says the request: "redis PING", "postgres SELECT 1".
	Name string `json:"name"`
	// Backend is the servers it was measured on; the locks of that
	// backend are given as multiples of it.
	Backend clients.Backend `json:"backend"`
	Latency
}

// The floors' names.
const (
	FloorRedis     = "redis PING"
	FloorPostgres  = "postgres SELECT 1"
	FloorEtcd      = "etcd Get"
	FloorZooKeeper = "zookeeper exists"
	FloorMemcached = "memcached mn"
)

// floorOf names the floor a lock of backend b is measured against ("":
// none).
func floorOf(b clients.Backend) string {
	switch b {
	case clients.RedisBackend, clients.SentinelBackend:
		return FloorRedis
	case clients.PostgresBackend:
		return FloorPostgres
	case clients.EtcdBackend:
		return FloorEtcd
	case clients.ZooKeeperBackend:
		return FloorZooKeeper
	case clients.MemcachedBackend:
		return FloorMemcached
	}
	return ""
}

// measureFloor times name's one request to the server at addr (for
// PostgreSQL, dsn) for d.
func measureFloor(ctx context.Context, d time.Duration, name string, addr, dsn string) (Floor, error) {
	op, b, close, err := floorOp(ctx, name, addr, dsn)
	if err != nil {
		return Floor{}, err
	}
	defer close()
	lat, err := timeOp(ctx, d, op)
	if err != nil {
		return Floor{}, fmt.Errorf("%s: %v", name, err)
	}
	return Floor{Name: name, Backend: b, Latency: lat}, nil
}

// floorOp is name's one request to the server at addr (for PostgreSQL,
// dsn), on a connection of its own that close closes.
func floorOp(ctx context.Context, name string, addr, dsn string) (op func() error, b clients.Backend, close func(), err error) {
	switch name {
	case FloorRedis:
		c := clients.NewRedisClient(addr, clients.DefaultNodeTimeout)
		return func() error { return c.Ping(ctx).Err() }, clients.RedisBackend, func() { c.Close() }, nil
	case FloorPostgres:
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %v", name, err)
		}
		op := func() error {
			var one int
			return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
		}
		return op, clients.PostgresBackend, func() { conn.Close(context.Background()) }, nil
	case FloorEtcd:
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %v", name, err)
		}
		op := func() error { _, err := cli.Get(ctx, "/locksim/cost-floor"); return err }
		return op, clients.EtcdBackend, func() { cli.Close() }, nil
	case FloorZooKeeper:
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(silent{}), zk.WithLogInfo(false))
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %v", name, err)
		}
		return func() error { _, _, err := conn.Exists("/"); return err }, clients.ZooKeeperBackend, conn.Close, nil
	case FloorMemcached:
		// mn, the meta protocol's no-op: memcached answers MN.
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %v", name, err)
		}
		rd := bufio.NewReader(c)
		op := func() error {
			if _, err := c.Write([]byte("mn\r\n")); err != nil {
				return err
			}
			line, err := rd.ReadString('\n')
			if err == nil && line != "MN\r\n" {
				err = fmt.Errorf("mn answered %q", line)
			}
			return err
		}
		return op, clients.MemcachedBackend, func() { c.Close() }, nil
	}
	return nil, "", nil, fmt.Errorf("no floor %q", name)
}

// silent is a ZooKeeper logger that says nothing: the client logs every
// connection it makes.
type silent struct{}

func (silent) Printf(string, ...any) {}
