package env

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// server is the method set nemesis drives a lock server by
// (nemesis.Server): a ZooKeeper member and a sentinel have it, as an etcd
// member does.
type server interface {
	Pause() error
	Resume() error
	Running() bool
	Crash()
	Restart(ctx context.Context) error
}

var (
	_ server = (*EtcdMember)(nil)
	_ server = (*ZooKeeperMember)(nil)
	_ server = (*SentinelNode)(nil)
)

func startTestZooKeeper(t testing.TB, o ZooKeeperOptions) *ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*ZooKeeperStartTimeout)
	defer cancel()
	z, err := StartZooKeeper(ctx, o)
	if errors.Is(err, ErrZooKeeperNotFound) {
		t.Fatal(err) // make test installs zookeeper; a missing one is a failure, not a skip
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// zkLeft lists the processes whose command line names dir (pgrep -f).
func zkLeft(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("pgrep", "-a", "-f", dir).Output()
	if err != nil && len(out) == 0 {
		return "" // pgrep exits 1 when nothing matches
	}
	return strings.TrimSpace(string(out))
}

// TestZooKeeperThreeMembers starts a real three-member ensemble, writes
// and reads a znode, keeps serving through a paused follower and through
// the crash of its leader, restarts that member (which then serves the
// data), resets, and leaves nothing behind.
func TestZooKeeperThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	zooKeeperThreeMembers(t, ZooKeeperOptions{Members: 3})
}

// TestZooKeeperInContainers: the same on members in containers (the
// pause the cgroup freezer, the crash a forced remove, the restart a new
// container on the member's dir).
func TestZooKeeperInContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs a docker engine and the locksim images")
	}
	needDocker(t, DefaultZooKeeperImage)
	zooKeeperThreeMembers(t, ZooKeeperOptions{Members: 3, Image: DefaultZooKeeperImage})
}

func zooKeeperThreeMembers(t *testing.T, o ZooKeeperOptions) {
	start := time.Now()
	z := startTestZooKeeper(t, o)
	if o.Image != "" {
		for _, m := range z.Members {
			if _, ok := m.Proc().(*Container); !ok {
				t.Fatalf("member %s is a %T, not a container", m.Name, m.Proc())
			}
		}
	}
	t.Logf("3 members serving in %v", time.Since(start).Round(time.Millisecond))
	for _, m := range z.Members {
		if ps := m.Proc(); ps != nil {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(ps.Pid()) + "/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, "VmRSS") {
						t.Logf("member %s: %s", m.Name, strings.Join(strings.Fields(l), " "))
					}
				}
			}
		}
	}
	ctx := context.Background()
	c, err := z.Connect(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/k", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := c.Get("/k"); err != nil || string(b) != "v" {
		t.Fatalf("get /k: %q, %v", b, err)
	}

	leader, err := z.Leader()
	if err != nil {
		t.Fatal(err)
	}
	var follower *ZooKeeperMember
	for _, m := range z.Members {
		if m != leader {
			follower = m
			break
		}
	}
	// A write within 20 s: the client may be connected to the member that
	// was paused or crashed, and gives it up only after two thirds of its
	// session timeout; then it reconnects to another member and a retry
	// goes through.
	write := func(v, what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := c.Set("/k", []byte(v), -1)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: two of three members should keep quorum: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := follower.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Logf("client on %s; paused %s (%s), leader %s (%s)", c.Server(), follower.Name, follower.Addr, leader.Name, leader.Addr)
	paused := time.Now()
	write("paused", "a paused follower")
	t.Logf("writes %v after a follower's pause", time.Since(paused).Round(time.Millisecond))
	if err := follower.Resume(); err != nil {
		t.Fatal(err)
	}

	leader.Crash()
	if leader.Running() {
		t.Fatal("the leader still runs after Crash")
	}
	// The other two elect a new leader (a few hundred ms).
	crashed := time.Now()
	write("v2", "a crashed leader")
	t.Logf("writes again %v after the leader's crash", time.Since(crashed).Round(time.Millisecond))
	if _, err := z.Leader(); err != nil {
		t.Fatal(err)
	}

	restarted := time.Now()
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the old leader serves again %v after Restart", time.Since(restarted).Round(time.Millisecond))
	only := &ZooKeeper{Members: []*ZooKeeperMember{leader}}
	cl, err := only.Connect(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Sync("/k"); err != nil {
		t.Fatal(err)
	}
	if b, _, err := cl.Get("/k"); err != nil || string(b) != "v2" {
		t.Fatalf("read through the restarted member: %q, %v", b, err)
	}

	if _, err := c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/a/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := z.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if kids, _, err := c.Children("/"); err != nil || len(kids) != 1 || kids[0] != "zookeeper" {
		t.Fatalf("Reset left %v (%v)", kids, err)
	}

	dir := z.dir
	before, beforeC := LiveCount(), ContainerCount()
	z.Close()
	if o.Image == "" && LiveCount() != before-3 {
		t.Fatalf("Close left processes: %d live, was %d", LiveCount(), before)
	}
	if o.Image != "" && ContainerCount() != beforeC-3 {
		t.Fatalf("Close left containers: %d, was %d", ContainerCount(), beforeC)
	}
	if left := zkLeft(t, dir); left != "" {
		t.Fatalf("after Close, still running:\n%s", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s", dir)
	}
}

// TestZooKeeperStandalone: one member runs standalone and serves.
func TestZooKeeperStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startTestZooKeeper(t, ZooKeeperOptions{})
	if mode, err := z.Members[0].Mode(); err != nil || mode != ZooKeeperStandalone {
		t.Fatalf("mode %q, %v", mode, err)
	}
	c, err := z.Connect(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperWallClockJump measures what ZooKeeper's session expiry
// reads: every member runs under the clock shim, and jumping their wall
// clocks an hour ahead (then an hour behind) neither expires a session
// whose timeout is a second nor delays anything the test sees, while a
// znode created after the jump carries a ctime an hour ahead, which shows
// the shim did reach the JVMs. Sessions are timed on CLOCK_MONOTONIC (see
// the doc of zookeeper.go).
func TestZooKeeperWallClockJump(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startTestZooKeeper(t, ZooKeeperOptions{Members: 3, ClockShim: true})
	ctx := context.Background()
	c, err := z.Connect(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sid := c.SessionID()
	if _, err := c.Create("/held", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		for _, m := range z.Members {
			m.clock.SetOffset(jump)
		}
		path := "/after-" + strconv.Itoa(int(jump.Hours()))
		if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, st, err := c.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		skew := time.UnixMilli(st.Ctime).Sub(time.Now()) - jump
		if skew < -5*time.Second || skew > 5*time.Second {
			t.Fatalf("a znode created after a %v jump has ctime %v: the shim did not reach the members", jump, time.UnixMilli(st.Ctime))
		}
		time.Sleep(3 * time.Second) // three session timeouts
		ok, st, err := c.Exists("/held")
		if err != nil || !ok || st.EphemeralOwner != sid || c.SessionID() != sid {
			t.Fatalf("after a %v wall-clock jump: the ephemeral znode exists %v (owner %x, session %x, was %x), %v",
				jump, ok, st.EphemeralOwner, c.SessionID(), sid, err)
		}
	}
}

// TestZooKeeperDiesWithHarness: a harness killed with kill -9 (no cleanup
// of any kind) leaves no java running (Pdeathsig), and the next start's
// Reap removes its data dir.
func TestZooKeeperDiesWithHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	if os.Getenv("LOCKSIM_ZOOKEEPER_CHILD") != "" {
		z := startTestZooKeeper(t, ZooKeeperOptions{Members: 3})
		var pids []string
		for _, m := range z.Members {
			pids = append(pids, strconv.Itoa(m.Proc().Pid()))
		}
		os.Stdout.WriteString("started " + z.dir + " " + strings.Join(pids, " ") + "\n")
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZooKeeperDiesWithHarness$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSIM_ZOOKEEPER_CHILD=1")
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
		_ = cmd.Wait()
		t.Fatalf("the child did not start its ensemble: %v", err)
	}
	f := strings.Fields(strings.TrimPrefix(line, "started "))
	dir, pids := f[0], f[1:]
	_ = cmd.Process.Kill() // kill -9
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for syscall.Kill(pid, 0) == nil && running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("member pid %d still runs after its harness was killed", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if left := zkLeft(t, dir); left != "" {
		t.Fatalf("still running after the harness was killed:\n%s", left)
	}
	r, err := Reap(ReapRoots()...)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range r.Dirs {
		found = found || strings.HasPrefix(d, dir+" ")
	}
	if !found {
		t.Fatalf("Reap did not remove the dead harness's %s (removed %v)", dir, r.Dirs)
	}
}

func TestZooKeeperBadOptions(t *testing.T) {
	for _, o := range []ZooKeeperOptions{
		{Members: -1},
		{Members: 27},
		{TickTime: 1500 * time.Microsecond},
		{TickTime: 100 * time.Millisecond, MaxSessionTimeout: 150 * time.Millisecond},
	} {
		if z, err := StartZooKeeper(context.Background(), o); err == nil {
			z.Close()
			t.Errorf("%+v: started", o)
		}
	}
}

// BenchmarkZooKeeperStart is the time from StartZooKeeper to an ensemble
// that serves (a leader elected, every member answering), JVM start
// included.
func BenchmarkZooKeeperStart(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(strconv.Itoa(n)+"-members", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*ZooKeeperStartTimeout)
				z, err := StartZooKeeper(ctx, ZooKeeperOptions{Members: n})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				z.Close()
				b.StartTimer()
			}
		})
	}
}

// TestZooKeeperMemberLosesDisk: a member whose data dir is emptied (all
// but its myid) restarts, copies the ensemble's state from its leader,
// and then serves a znode written before its loss: what the
// zookeeper-member-crash story counts on. It fails if LoseDisk leaves
// the log (the dir check) or if the member served from nothing.
func TestZooKeeperMemberLosesDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts zookeeper")
	}
	z := startTestZooKeeper(t, ZooKeeperOptions{Members: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := z.Connect(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/before", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	leader, err := z.Leader()
	if err != nil {
		t.Fatal(err)
	}
	m := z.Members[0]
	if m == leader {
		m = z.Members[1]
	}
	if err := m.LoseDisk(); err != nil {
		t.Fatal(err)
	}
	if m.Running() {
		t.Fatal("the member still runs after LoseDisk")
	}
	left, err := os.ReadDir(filepath.Join(m.Dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != "myid" {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("data dir after LoseDisk holds %v, want only myid", names)
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	only := &ZooKeeper{Members: []*ZooKeeperMember{m}}
	cl, err := only.Connect(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if b, _, err := cl.Get("/before"); err != nil || string(b) != "v" {
		t.Fatalf("member %s after losing its disk: get /before: %q, %v; want the ensemble's znode", m.Name, b, err)
	}
}
