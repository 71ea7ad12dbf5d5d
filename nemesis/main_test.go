package nemesis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
)

// envRenew puts the test binary in helper mode: a stand-in for a worker's
// lock watchdog that renews a key every 100ms (see renewLoop).
const envRenew = "LOCKSIM_NEMESIS_RENEW"

func TestMain(m *testing.M) {
	if v := os.Getenv(envRenew); v != "" {
		os.Exit(renewLoop(v))
	}
	code := m.Run()
	env.Cleanup()
	os.Exit(code)
}

// renewLoop ("addr key") sets key's TTL to 1s every 100ms for at most 30s,
// as a lock client's watchdog does.
func renewLoop(arg string) int {
	addr, key, _ := strings.Cut(arg, " ")
	c := newClient(addr, time.Second)
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.PExpire(ctx, key, time.Second).Err()
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	return 0
}

// newClient is a go-redis client as the lock clients make them: every
// timeout set, no retries.
func newClient(addr string, timeout time.Duration) *redis.Client {
	return clients.NewRedisClient(addr, timeout)
}

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not installed: make test installs it (apt-get install redis-server)")
	}
}

// redisImage, when set, runs every server startRedis starts in a
// container of that image (TestFaultsOnContainers).
var redisImage string

// TestFaultsOnContainers plays the server faults' tests again with every
// Redis server a container of the docker backend (make test builds the
// image): the freezer for a pause, a forced remove for a crash, the shim
// mounted for a clock jump, a replica container for a failover.
func TestFaultsOnContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.CheckImage(ctx, env.DefaultRedisImage); err != nil {
		t.Fatalf("%v (make test runs make docker first)", err)
	}
	redisImage = env.DefaultRedisImage
	defer func() { redisImage = "" }()
	for name, test := range map[string]func(*testing.T){
		"pause":         TestPauseServerAnswersAfterResume,
		"crash":         TestCrashRestartPersistence,
		"delayed-crash": TestCrashDelayedRestart,
		"clock-jump":    TestClockJumpExpiresKey,
		"clock-drift":   TestClockDriftRate,
		"failover":      TestFailoverLosesUnreplicatedKey,
	} {
		t.Run(name, test)
	}
}

func startRedis(t *testing.T, o env.RedisOptions) *env.Redis {
	t.Helper()
	if o.Image == "" {
		o.Image = redisImage
	}
	if o.Image == "" {
		needRedis(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := env.StartRedis(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func startPG(t *testing.T) *env.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg, err := env.StartPostgres(ctx, "", env.PostgresOptions{})
	if errors.Is(err, env.ErrPostgresNotFound) {
		t.Fatalf("%v (make test installs it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	return pg
}

func newNetwork(t *testing.T) *env.Network {
	n := env.NewNetwork()
	t.Cleanup(n.Close)
	return n
}

func addLink(t *testing.T, n *env.Network, client int, node, upstream string) *env.Link {
	t.Helper()
	l, err := n.AddLink(env.LinkName(client, node), upstream)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func inject(t *testing.T, f Breaker, tg *Target) {
	t.Helper()
	if err := f.Inject(ctxT(t, 10*time.Second), tg); err != nil {
		t.Fatalf("inject %T on %s: %v", f, f.On(), err)
	}
}

func heal(t *testing.T, f Breaker, tg *Target) {
	t.Helper()
	if err := f.Heal(ctxT(t, 10*time.Second), tg); err != nil {
		t.Fatalf("heal %T on %s: %v", f, f.On(), err)
	}
}

func redisTime(t *testing.T, r *env.Redis) time.Time {
	t.Helper()
	tm, err := r.Client().Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return tm
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func pgConnect(t *testing.T, pg *env.Postgres, addr string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctxT(t, 5*time.Second), pg.DSN(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func tryLock(ctx context.Context, c *pgx.Conn, key int64) (bool, error) {
	var ok bool
	err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}
