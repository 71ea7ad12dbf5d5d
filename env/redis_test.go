package env

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

func needRedis(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath(redisServerPath()); err != nil {
		tb.Fatal("redis-server not installed: make test installs it (apt-get install redis-server)")
	}
}

func startTestRedis(tb testing.TB, o RedisOptions) *Redis {
	tb.Helper()
	needRedis(tb)
	if o.Name == "" {
		o.Name = "A"
	}
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := StartRedis(ctx, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

func redisTime(t *testing.T, r *Redis) time.Time {
	t.Helper()
	tm, err := r.Client().Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return tm
}

func within(d, want, tol time.Duration) bool { return d >= want-tol && d <= want+tol }

func TestRedisTimeFollowsOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startTestRedis(t, RedisOptions{})
	t0 := redisTime(t, r)
	if d := t0.Sub(time.Now()); !within(d, 0, 2*time.Second) {
		t.Fatalf("with no offset Redis TIME is %v off the real clock", d)
	}
	r.Clock.SetOffset(60 * time.Second)
	t1 := redisTime(t, r)
	if d := t1.Sub(t0); !within(d, 60*time.Second, 2*time.Second) {
		t.Fatalf("after SetOffset(+60s) TIME moved %v, want ~60s", d)
	}
	r.Clock.SetOffset(-time.Hour)
	if d := redisTime(t, r).Sub(t0); !within(d, -time.Hour, 2*time.Second) {
		t.Fatalf("after SetOffset(-1h) TIME moved %v, want ~-1h", d)
	}
}

func TestRedisKeyExpiresOnClockJump(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	redisKeyExpiresOnClockJump(t, RedisOptions{})
}

// redisKeyExpiresOnClockJump: a +60 s jump of the shim's clock expires a
// 30 s key at once, as Redis sees it (o: local or in a container).
func redisKeyExpiresOnClockJump(t *testing.T, o RedisOptions) {
	r := startTestRedis(t, o)
	ctx := context.Background()
	c := r.Client()
	ok, err := c.SetNX(ctx, "lock", "owner1", 30*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("first SET NX PX 30000 = %v, %v; want granted", ok, err)
	}
	ok, err = c.SetNX(ctx, "lock", "owner2", 30*time.Second).Result()
	if err != nil || ok {
		t.Fatalf("second SET NX before the jump = %v, %v; want refused", ok, err)
	}
	r.Clock.Jump(60 * time.Second)
	if v, err := c.Get(ctx, "lock").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after a +60s jump = %q, %v; want nil (expired)", v, err)
	}
	ok, err = c.SetNX(ctx, "lock", "owner2", 30*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("second SET NX after the jump = %v, %v; want granted", ok, err)
	}
	if v, _ := c.Get(ctx, "lock").Result(); v != "owner2" {
		t.Fatalf("lock holder = %q, want owner2", v)
	}
	// The TTL counts on the shifted clock: a jump back leaves it at ~30 s
	// from the moment of the second SET.
	if ttl, _ := c.PTTL(ctx, "lock").Result(); !within(ttl, 30*time.Second, 2*time.Second) {
		t.Fatalf("PTTL = %v, want ~30s", ttl)
	}
}

func TestRedisTimeRate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startTestRedis(t, RedisOptions{})
	r.Clock.SetRate(1.5)
	r0, real0 := redisTime(t, r), time.Now()
	time.Sleep(time.Second)
	r1, real1 := redisTime(t, r), time.Now()
	want := time.Duration(1.5 * float64(real1.Sub(real0)))
	if got := r1.Sub(r0); !within(got, want, 150*time.Millisecond) {
		t.Fatalf("at rate 1.5 Redis TIME advanced %v over %v of real time, want ~%v", got, real1.Sub(real0), want)
	}
	// Back to rate 1 without a jump.
	before := redisTime(t, r)
	r.Clock.SetRate(1)
	if d := redisTime(t, r).Sub(before); !within(d, 0, 100*time.Millisecond) {
		t.Fatalf("SetRate(1) jumped Redis TIME by %v", d)
	}
}

func TestRedisCrashRestartPersistence(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	redisCrashRestartPersistence(t, RedisOptions{})
}

// redisCrashRestartPersistence: a kill -9 loses the data without
// persistence and keeps it with appendfsync always.
func redisCrashRestartPersistence(t *testing.T, o RedisOptions) {
	for _, tc := range []struct {
		p    Persistence
		kept bool
	}{{PersistNone, false}, {PersistAlways, true}} {
		t.Run(string(tc.p), func(t *testing.T) {
			o.Name, o.Persistence = "B", tc.p
			r := startTestRedis(t, o)
			ctx := context.Background()
			if err := r.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			oldPid, addr := r.Proc().Pid(), r.Addr
			r.Crash()
			if r.Running() {
				t.Fatal("Running after Crash")
			}
			if err := syscall.Kill(oldPid, 0); err == nil {
				t.Fatalf("pid %d still exists after Crash", oldPid)
			}
			if err := r.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if r.Addr != addr || r.Proc().Pid() == oldPid {
				t.Fatalf("after Restart: addr %s pid %d, was %s pid %d", r.Addr, r.Proc().Pid(), addr, oldPid)
			}
			v, err := r.Client().Get(ctx, "k").Result()
			switch {
			case tc.kept && v != "v":
				t.Fatalf("persistence %s: GET k after crash = %q, %v; want kept", tc.p, v, err)
			case !tc.kept && !errors.Is(err, redis.Nil):
				t.Fatalf("persistence %s: GET k after crash = %q, %v; want lost", tc.p, v, err)
			}
		})
	}
}

func TestRedisRestartKeepsClock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startTestRedis(t, RedisOptions{})
	r.Clock.SetOffset(time.Hour)
	if err := r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := redisTime(t, r).Sub(time.Now()); !within(d, time.Hour, 2*time.Second) {
		t.Fatalf("after Restart Redis TIME is %v off real, want the +1h offset kept", d)
	}
}

func TestRedisPause(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	redisPause(t, RedisOptions{})
}

// redisPause: a paused server answers nothing and keeps its connections.
func redisPause(t *testing.T, o RedisOptions) {
	r := startTestRedis(t, o)
	c := redis.NewClient(&redis.Options{
		Addr: r.Addr, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		MaxRetries: -1, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING before Pause: %v", err)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if !r.Paused() || !r.Running() {
		t.Fatalf("Paused %v Running %v, want both", r.Paused(), r.Running())
	}
	start := time.Now()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered while paused")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("PING while paused took %v to fail, want ~200ms", d)
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestRedisStopAndCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startTestRedis(t, RedisOptions{})
	pid := r.Proc().Pid()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("signal 0 to a running server: %v", err)
	}
	r.Stop()
	r.Stop() // idempotent
	if r.Running() {
		t.Fatal("Running after Stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("pid %d still exists after Stop", pid)
	}
	if err := redisPing(r.Addr, 200*time.Millisecond); err == nil {
		t.Fatal("PING answered after Stop")
	}

	// A server left running, and a paused one, die with Cleanup.
	r2 := startTestRedis(t, RedisOptions{Name: "C"})
	r3 := startTestRedis(t, RedisOptions{Name: "D"})
	if err := r3.Pause(); err != nil {
		t.Fatal(err)
	}
	pids := []int{r2.Proc().Pid(), r3.Proc().Pid()}
	Cleanup()
	for _, p := range pids {
		if err := syscall.Kill(p, 0); err == nil {
			t.Errorf("pid %d still exists after Cleanup", p)
		}
	}
	if n := LiveCount(); n != 0 {
		t.Fatalf("LiveCount after Cleanup = %d, want 0", n)
	}
}

func TestRedisReset(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r := startTestRedis(t, RedisOptions{})
	ctx := context.Background()
	c := r.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	r.Clock.SetOffset(time.Hour)
	r.Clock.SetRate(2)
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := r.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after Reset = %d, %v; want 0", n, err)
	}
	// A new server knows no script: a client's EVALSHA takes a second
	// round trip (NOSCRIPT, then EVAL) on it, and so on a reset one.
	if known, err := c.ScriptExists(ctx, sha).Result(); err != nil || known[0] {
		t.Fatalf("SCRIPT EXISTS after Reset = %v, %v; want false", known, err)
	}
	if r.Clock.Offset() != 0 || r.Clock.Rate() != 1 {
		t.Fatalf("clock after Reset: offset %v rate %v", r.Clock.Offset(), r.Clock.Rate())
	}
	if d := redisTime(t, r).Sub(time.Now()); !within(d, 0, 2*time.Second) {
		t.Fatalf("TIME after Reset is %v off real", d)
	}
}

func TestRedisReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	dir := t.TempDir()
	a := startTestRedis(t, RedisOptions{Name: "A", Dir: dir})
	b := startTestRedis(t, RedisOptions{Name: "B", Dir: dir, ReplicaOf: a.Addr})
	ctx := context.Background()
	if err := a.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := b.Client().Get(ctx, "k").Result()
		if v == "v" {
			break
		}
		if time.Now().After(deadline) {
			info, _ := b.Client().Info(ctx, "replication").Result()
			t.Fatalf("replica never got the key\n%s", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Client().Set(ctx, "x", "y", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("SET on the replica = %v, want READONLY", err)
	}
	if err := b.Reset(ctx); err != nil {
		t.Fatalf("Reset on a replica: %v", err)
	}
}

func TestRedisBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, o := range []RedisOptions{
		{},
		{Name: "A", Persistence: "sometimes"},
		{Name: "A", ReplicaOf: "no-port"},
	} {
		if r, err := StartRedis(ctx, o); err == nil {
			r.Close()
			t.Errorf("StartRedis(%+v) succeeded, want an error", o)
		}
	}
}

func TestRedisStartFailureShowsLog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server (on a bad config)")
	}
	needRedis(t)
	// "replicaof 127.0.0.1 bad port" has a wrong argument count: Redis
	// reports the config error on stderr and exits.
	r := &Redis{Name: "Z", Dir: t.TempDir(), opts: RedisOptions{Name: "Z", ReplicaOf: "127.0.0.1:bad port"}}
	r.Port, r.Addr = 1, "127.0.0.1:1"
	err := r.start(context.Background())
	if err == nil {
		t.Fatal("start with a broken config succeeded")
	}
	if !strings.Contains(err.Error(), "redis.stderr") {
		t.Fatalf("error does not show the server's output:\n%v", err)
	}
}

func BenchmarkStartRedis(b *testing.B) {
	needRedis(b)
	dir := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		r, err := StartRedis(ctx, RedisOptions{Name: "A", Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// TestRedisStartOnATakenPort: a server started on a port another Redis
// server already holds fails to bind, but that other server answers
// PING at once; the start must see it is not its own (CONFIG GET dir)
// and report the clash, so that the caller starts it on another port,
// never play a story on the wrong node (CI, 2026-12-06: on the docker
// backend, a node whose port was taken answered with another node's
// keys).
func TestRedisStartOnATakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	a := startTestRedis(t, RedisOptions{Name: "A"})
	b := &Redis{Name: "B", Dir: t.TempDir(), opts: RedisOptions{Name: "B"}, serverProc: serverProc{what: "redis B"}}
	b.Port, b.Addr = a.Port, a.Addr
	err := b.start(context.Background())
	if err == nil {
		b.Crash()
		t.Fatal("start on a port redis A holds succeeded: A's PONG was taken for B's")
	}
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("start on a taken port: %v, want a clash (errPortInUse)", err)
	}
}
