package env

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// needDocker fails the test when no Docker engine answers or an image is
// missing: `make test` readies both (`make docker`).
func needDocker(t *testing.T, images ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, img := range images {
		if err := CheckImage(ctx, img); err != nil {
			t.Fatalf("%v (make test runs make docker first)", err)
		}
	}
}

// The faults' primitives on a redis-server in a container: the clock shim
// preloaded through the mounted library, the cgroup freezer, a forced
// remove as kill -9 with the AOF kept in the mounted dir.
func TestRedisInContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultRedisImage)
	o := RedisOptions{Image: DefaultRedisImage}
	t.Run("clock-jump", func(t *testing.T) { redisKeyExpiresOnClockJump(t, o) })
	t.Run("pause", func(t *testing.T) { redisPause(t, o) })
	t.Run("crash-restart", func(t *testing.T) { redisCrashRestartPersistence(t, o) })
	t.Run("removed", func(t *testing.T) {
		r := startTestRedis(t, o)
		c, ok := r.Proc().(*Container)
		if !ok {
			t.Fatalf("the server is a %T, want a *Container", r.Proc())
		}
		before := ContainerCount()
		r.Close()
		if n := ContainerCount(); n != before-1 {
			t.Fatalf("%d containers registered after Close, want %d", n, before-1)
		}
		if !c.Exited() {
			t.Fatal("the container still runs after Close")
		}
		if _, err := os.Stat("/proc/" + itoa(c.Pid())); err == nil {
			t.Fatalf("the server's pid %d still exists after Close", c.Pid())
		}
	})
}

// An image whose redis-server does not load the shim is refused at start:
// a clock fault would otherwise do nothing at all.
func TestContainerWithoutShimIsRefused(t *testing.T) {
	r := &Redis{Name: "A", opts: RedisOptions{Image: "example/redis:alpine"}, shimLib: "/nonexistent/clockshim.so"}
	err := r.checkShim(selfProcess{})
	if err == nil || !strings.Contains(err.Error(), "did not load the clock shim") {
		t.Fatalf("checkShim with the shim not mapped = %v, want a refusal", err)
	}
	exe, _ := os.Executable()
	r.shimLib = exe // mapped in this process: accepted
	if err := r.checkShim(selfProcess{}); err != nil {
		t.Fatalf("checkShim with the library mapped = %v, want nil", err)
	}
}

// selfProcess is this test process, seen as a server's process.
type selfProcess struct{ process }

func (selfProcess) Pid() int { return os.Getpid() }

func itoa(n int) string { return strconv.Itoa(n) }

// PostgreSQL in a container: advisory locks are exclusive, Reset frees a
// holder's lock and makes the tables, idle_session_timeout reaches the
// server, Stop removes the container.
func TestPostgresInContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultPostgresImage)
	pg := startPG(t, "", PostgresOptions{Image: DefaultPostgresImage, IdleSessionTimeout: time.Hour})
	_, c2 := heldAndRefused(t, pg, 42)
	ctx := context.Background()
	var timeout string
	if err := c2.QueryRow(ctx, `SHOW idle_session_timeout`).Scan(&timeout); err != nil || timeout != "1h" {
		t.Fatalf("idle_session_timeout = %q, %v; want 1h", timeout, err)
	}
	if err := pg.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	c3 := pgConnect(t, pg)
	if ok, err := tryAdvisory(t, c3, 42); err != nil || !ok {
		t.Fatalf("after Reset: got %v, %v; want the lock (holder terminated)", ok, err)
	}
	c, ok := pg.proc.(*Container)
	if !ok {
		t.Fatalf("the server is a %T, want a *Container", pg.proc)
	}
	pg.Stop()
	if !c.Exited() {
		t.Fatal("the container still runs after Stop")
	}
	if _, err := os.Stat("/proc/" + itoa(c.Pid())); err == nil {
		t.Fatalf("the postmaster's pid %d still exists after Stop", c.Pid())
	}
}

// A harness killed with kill -9 cannot remove its containers: the next
// start does (ReapContainers), and leaves a live harness's alone.
func TestReapContainersOfADeadHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultRedisImage)
	if os.Getenv("LOCKSIM_CONTAINER_CHILD") != "" {
		// The child: start a server in a container, say so, then wait to
		// be killed.
		r, err := StartRedis(context.Background(), RedisOptions{Name: "A", Image: DefaultRedisImage})
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("started " + r.Proc().(*Container).ID + "\n")
		time.Sleep(time.Minute)
		return
	}
	mine := startTestRedis(t, RedisOptions{Image: DefaultRedisImage})
	cmd := exec.Command(os.Args[0], "-test.run=^TestReapContainersOfADeadHarness$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSIM_CONTAINER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "started ") {
		line, err = rd.ReadString('\n')
	}
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not start its container: %v", err)
	}
	id := strings.TrimSpace(strings.TrimPrefix(line, "started "))
	_ = cmd.Process.Kill() // kill -9: no cleanup of any kind
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reaped, err := ReapContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || !strings.Contains(reaped[0], "locksim-redis-A-") {
		t.Fatalf("reaped %v, want the dead child's one container (%s)", reaped, id[:12])
	}
	if _, err := dockerCli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
		t.Fatalf("container %s still exists after the reap", id[:12])
	}
	if !mine.Running() || redisPing(mine.Addr, time.Second) != nil {
		t.Fatal("the reap touched this live harness's container")
	}
}

// A DOCKER_HOST on another machine is refused with the reason; a local
// socket or a loopback address is this machine.
func TestEngineOnThisMachine(t *testing.T) {
	for host, ok := range map[string]bool{
		"": true, "unix:///var/run/docker.sock": true, "tcp://127.0.0.1:2375": true, "tcp://localhost:2376": true,
		"tcp://10.0.0.5:2375": false, "ssh://ci@builder": false, "tcp://docker.example.com:2376": false,
	} {
		err := engineOnThisMachine(host)
		if (err == nil) != ok {
			t.Errorf("DOCKER_HOST=%q: %v, want accepted %v", host, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "needs an engine on this machine") {
			t.Errorf("DOCKER_HOST=%q: the refusal gives no reason: %v", host, err)
		}
	}
}
