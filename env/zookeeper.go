package env

// A ZooKeeper ensemble of Debian's zookeeper package (3.8.0): each member
// is a JVM the harness starts directly (java ... QuorumPeerMain zoo.cfg,
// not zkServer.sh or an init script), so that it is a child process like
// every other server: its own process group, SIGKILL on the harness's
// death (Pdeathsig: the java launcher runs the JVM in the process it was
// exec'd as), its data on tmpfs in a marked temp dir that Reap removes
// after a harness killed with kill -9. On the docker backend
// (ZooKeeperOptions.Image) each member is the same JVM command in a
// container of the image, as an etcd member is: host network, its dir
// mounted at its host path, a pause the cgroup freezer, a crash a forced
// remove, a restart a new container on the same dir; a container left by
// a harness killed with kill -9 goes at the next start (ReapContainers).
//
// # What ZooKeeper's sessions are timed by (checked 2026-12-01)
//
// Session expiry, which frees a lock holder's ephemeral znode, is timed on
// the JVM's monotonic clock, which no wall-clock fault moves:
//
//   - The leader's SessionTrackerImpl
//     (zookeeper-server/src/main/java/org/apache/zookeeper/server/SessionTrackerImpl.java,
//     class SessionTrackerImpl, methods run and touchSession) keeps every
//     session in an ExpiryQueue and sleeps (Thread.sleep) until the queue's
//     next expiry time; touchSession moves a session to the bucket
//     now + timeout, rounded up to the next tick.
//   - ExpiryQueue (.../server/ExpiryQueue.java, methods update, poll and
//     getWaitTime) reads the time only through Time.currentElapsedTime().
//   - Time.currentElapsedTime() (.../common/Time.java) is
//     System.nanoTime() / 1000000; its doc says a change of the system
//     clock moves currentWallTime but not this.
//     Tag release-3.8.0-1, commit 5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f,
//     https://github.com/apache/zookeeper/blob/release-3.8.0-1/zookeeper-server/src/main/java/org/apache/zookeeper/common/Time.java
//     (ExpiryQueue.java and SessionTrackerImpl.java beside it under server/).
//     Leader election and the leader's quorum checks (Leader.java,
//     FastLeaderElection.java) use currentElapsedTime too, and the
//     follower-leader heartbeats are socket timeouts.
//   - OpenJDK 17 (Debian's openjdk-17, which the package pulls):
//     os::javaTimeNanos, behind System.nanoTime, is
//     clock_gettime(CLOCK_MONOTONIC); os::javaTimeMillis, behind
//     System.currentTimeMillis, is clock_gettime(CLOCK_REALTIME); relative
//     timed waits (Thread.sleep, LockSupport.parkNanos) wait on a condition
//     variable bound to CLOCK_MONOTONIC
//     (src/hotspot/os/posix/os_posix.cpp, https://github.com/openjdk/jdk17u-dev/blob/master/src/hotspot/os/posix/os_posix.cpp).
//
// The clock shim (clockshim/) is an LD_PRELOAD library, and it does load
// into the JVM (HotSpot calls glibc's clock_gettime): run under it with
// +60 s, System.currentTimeMillis moves by 60 s while System.nanoTime and
// a 1 s Thread.sleep do not (measured here, JDK 17.0.15). A clock jump
// shifts only CLOCK_REALTIME (and gettimeofday and time), as a real clock
// step (NTP, an operator's date -s) does: CLOCK_MONOTONIC passes through.
// So a jump reaches only what ZooKeeper stamps with the wall clock
// (znodes' ctime and mtime, transaction headers, metrics, and TTL and
// container znodes, which ContainerManager reaps by wall-clock age; the
// lock recipe uses none of those) and never a session's expiry:
// TestZooKeeperWallClockJump jumps every member an hour ahead while a
// session with a 1 s timeout stays open, and the session and its
// ephemeral znode live on, while a znode created after the jump carries a
// ctime an hour ahead. A clock drift is another matter: an oscillator that
// runs fast moves CLOCK_MONOTONIC with the wall clock, and the shim drifts
// both (and the process's timed waits), so a drift on the leader moves the
// expiry of every session it tracks. Every local member runs under the
// shim (ZooKeeperOptions.ClockShim), so both reach it as they reach a
// Redis node; the zookeeper-member-clock-jump story plays the jump that
// breaks Redlock on every member.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locksim/locksim/clockshim"
)

// ErrZooKeeperNotFound says ZooKeeper (its jar) or a Java runtime is not
// installed.
var ErrZooKeeperNotFound = errors.New("zookeeper not found: apt-get install zookeeper (it pulls a Java runtime)")

// ZooKeeperStartTimeout bounds how long StartZooKeeper and a member's
// Restart wait for the ensemble to serve. A JVM takes about a second to
// start here on an idle machine, several on a loaded one.
const ZooKeeperStartTimeout = 30 * time.Second

// DefaultZooKeeperTick is the tickTime members run with unless told.
//
// ZooKeeper counts everything in ticks: a session's timeout must lie
// within [minSessionTimeout, maxSessionTimeout], 2 and 20 ticks by
// default; a session expires between its timeout and one tick later (the
// ExpiryQueue rounds up to the next tick); followers must answer the
// leader within syncLimit ticks. 200 ms (ZooKeeper's default is 2 s)
// makes sessions of 0.4 s to 4 s possible, the range of the catalogue's
// TTLs, with an expiry precise to 0.2 s; 100 ms would allow shorter
// sessions but leave the followers' 10-tick limit at 1 s, within reach of
// a JVM starved of CPU on a 2-core machine shared by four test runs.
const DefaultZooKeeperTick = 200 * time.Millisecond

// ZooKeeperMinSessionTicks is minSessionTimeout in ticks, ZooKeeper's
// default: the shortest session a member grants.
const ZooKeeperMinSessionTicks = 2

// zkInitLimit and zkSyncLimit are in ticks: 5 s for a follower to connect
// to and sync with a new leader (a restarted member's JVM is still warming
// up), 2 s for a follower to answer the leader before the leader drops it,
// which is also how long followers take to notice a paused leader.
const (
	zkInitLimit = 25
	zkSyncLimit = 10
)

// zkHeap is each member's Java heap bound: the lock recipe's data is a few
// znodes, and three members of 64 MiB heaps take about 66 MiB of RSS each.
const zkHeap = "64m"

// DefaultZooKeeperImage is the docker backend's default ZooKeeper image
// (built by `make docker` from Debian's zookeeper package, as
// DefaultRedisImage is).
const DefaultZooKeeperImage = "locksim/zookeeper:bookworm"

// ZooKeeperOptions says how to start an ensemble.
type ZooKeeperOptions struct {
	// Members is how many members (A, B, C...; myid 1, 2, 3...); default
	// 1, which runs standalone.
	Members int
	// TickTime is ZooKeeper's tick; default DefaultZooKeeperTick. Whole
	// milliseconds.
	TickTime time.Duration
	// MaxSessionTimeout is the longest session timeout the members grant
	// (a client asking for more gets this); default 20 ticks, ZooKeeper's
	// own. The shortest is ZooKeeper's 2 ticks.
	MaxSessionTimeout time.Duration
	// Image, if set, runs each member in a container of this image (the
	// docker backend: host network, its dir mounted at its host path)
	// instead of as a local process. The image needs java on its PATH and
	// Debian's jars: /usr/share/java/zookeeper.jar, the jars its manifest
	// names, and slf4j-simple.jar for a log.
	Image string

	// ClockShim runs each member under the clock shim, its control file
	// in the member's dir (Clock): clock faults then reach it (see the doc
	// above). Local members only.
	ClockShim bool
}

// ZooKeeper is a real ZooKeeper ensemble of one or more members, each a
// java child process (or a container of the docker backend) on 127.0.0.1
// with its data dir on tmpfs, killed with the harness.
type ZooKeeper struct {
	Members []*ZooKeeperMember
	// TickTime, MinSessionTimeout and MaxSessionTimeout are what the
	// members were configured with: a session timeout a client asks for
	// is clamped to [MinSessionTimeout, MaxSessionTimeout].
	TickTime          time.Duration
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	dir string
}

// ZooKeeperMember is one member of an ensemble. A crash (SIGKILL) keeps
// its data dir: ZooKeeper syncs its transaction log before it
// acknowledges (forceSync, on tmpfs), so a restarted member has all it
// acknowledged and catches up from the leader on the rest.
type ZooKeeperMember struct {
	Name string
	// ID is its myid (1 for A).
	ID int
	// Addr is the client port's host:port.
	Addr string
	// Dir holds its config, data dir and log.
	Dir string

	peers        int    // the ensemble's size
	quorumAddr   string // followers connect to the leader here
	electionAddr string // leader election
	args         []string
	env          []string
	clock        *clockshim.Control // with ZooKeeperOptions.ClockShim
	image        string             // ZooKeeperOptions.Image

	serverProc
}

// Java and the jars, from Debian's packages (zookeeper, libzookeeper-java,
// libslf4j-java). zookeeper.jar's manifest names its dependencies;
// slf4j-simple, when present, gives the members a log (without a binding
// slf4j logs nothing at all).
const (
	zkJar        = "/usr/share/java/zookeeper.jar"
	zkLogJar     = "/usr/share/java/slf4j-simple.jar"
	zkMainClass  = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	zkLogName    = "zookeeper.log"
	zkStderrName = "zookeeper.stderr"
)

func zooKeeperJava() (java, classpath string, err error) {
	if java, err = debianBinary("java", ErrZooKeeperNotFound); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(zkJar); err != nil {
		return "", "", ErrZooKeeperNotFound
	}
	classpath = zkJar
	if _, err := os.Stat(zkLogJar); err == nil {
		classpath += ":" + zkLogJar
	}
	return java, classpath, nil
}

// StartZooKeeper starts an ensemble of o.Members members on free ports of
// 127.0.0.1 and waits until every member serves and, with more than one,
// one of them leads.
func StartZooKeeper(ctx context.Context, o ZooKeeperOptions) (*ZooKeeper, error) {
	if o.Members == 0 {
		o.Members = 1
	}
	if o.Members < 0 || o.Members > 26 {
		return nil, fmt.Errorf("start zookeeper: %d members (want 1 to 26)", o.Members)
	}
	if o.TickTime == 0 {
		o.TickTime = DefaultZooKeeperTick
	}
	if o.TickTime < time.Millisecond || o.TickTime%time.Millisecond != 0 {
		return nil, fmt.Errorf("start zookeeper: tick %v (want whole milliseconds)", o.TickTime)
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 20 * o.TickTime
	}
	if o.MaxSessionTimeout < 2*o.TickTime || o.MaxSessionTimeout%time.Millisecond != 0 {
		return nil, fmt.Errorf("start zookeeper: max session timeout %v (want whole milliseconds, at least 2 ticks: %v)",
			o.MaxSessionTimeout, 2*o.TickTime)
	}
	// In a container, the image's java and jars: a classpath entry the
	// image lacks (slf4j-simple.jar) is skipped by the JVM, and a missing
	// zookeeper.jar ends the member at once with its reason in the
	// member's stderr file.
	java, cp := "java", zkJar+":"+zkLogJar
	if o.Image == "" {
		var err error
		if java, cp, err = zooKeeperJava(); err != nil {
			return nil, err
		}
	} else if o.ClockShim {
		return nil, errors.New("start zookeeper: the clock shim test runs local members only")
	}
	// Another process may take a port between freePorts and the JVM's
	// bind: start again on new ports (retryClash).
	var z *ZooKeeper
	err := retryClash(ctx, func() (err error) {
		z, err = startZooKeeper(ctx, o, java, cp)
		return err
	})
	if err != nil {
		return nil, err
	}
	return z, nil
}

func startZooKeeper(ctx context.Context, o ZooKeeperOptions, java, cp string) (_ *ZooKeeper, err error) {
	dir, err := fastTempDir("locksim-zookeeper-")
	if err != nil {
		return nil, fmt.Errorf("start zookeeper: %w", err)
	}
	z := &ZooKeeper{dir: dir, TickTime: o.TickTime, MinSessionTimeout: ZooKeeperMinSessionTicks * o.TickTime, MaxSessionTimeout: o.MaxSessionTimeout}
	defer func() {
		if err != nil {
			z.Close()
		}
	}()
	ports, err := freePorts(3 * o.Members)
	if err != nil {
		return nil, fmt.Errorf("start zookeeper: %w", err)
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	for i := 0; i < o.Members; i++ {
		name := string(rune('A' + i))
		m := &ZooKeeperMember{Name: name, ID: i + 1, Dir: filepath.Join(dir, "zookeeper-"+name),
			Addr: addr(ports[3*i]), peers: o.Members, quorumAddr: addr(ports[3*i+1]), electionAddr: addr(ports[3*i+2]),
			image: o.Image, serverProc: serverProc{what: "zookeeper " + name}}
		if err := os.MkdirAll(filepath.Join(m.Dir, "data"), 0o700); err != nil {
			return nil, fmt.Errorf("start zookeeper %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(m.Dir, "data", "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("start zookeeper %s: %w", name, err)
		}
		z.Members = append(z.Members, m)
	}
	for _, m := range z.Members {
		conf := filepath.Join(m.Dir, "zoo.cfg")
		if err := os.WriteFile(conf, []byte(z.config(m)), 0o644); err != nil {
			return nil, fmt.Errorf("start zookeeper %s: %w", m.Name, err)
		}
		m.args = []string{java,
			"-Xmx" + zkHeap,
			// One GC thread and the C1 compiler only: a quicker start and
			// less CPU taken from the stories on a 2-core machine.
			"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			// Nothing outside the member's dir: no /tmp/hsperfdata_<user>
			// file, no attach socket, temp files and crash logs in Dir.
			"-XX:-UsePerfData", "-XX:+DisableAttachMechanism",
			"-XX:+ExitOnOutOfMemoryError",
			"-XX:ErrorFile=" + filepath.Join(m.Dir, "hs_err_%p.log"),
			"-Djava.io.tmpdir=" + m.Dir,
			// Transaction log files grow 1 MiB at a time (64 MiB by default).
			"-Dzookeeper.preAllocSize=1024",
			"-Dorg.slf4j.simpleLogger.logFile=" + filepath.Join(m.Dir, zkLogName),
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
			"-cp", cp, zkMainClass, conf,
		}
		if o.ClockShim {
			if m.clock, err = clockshim.NewControl(filepath.Join(m.Dir, "clock")); err != nil {
				return nil, fmt.Errorf("start zookeeper %s: %w", m.Name, err)
			}
			if m.env, err = clockshim.Env(m.clock.Path()); err != nil {
				return nil, fmt.Errorf("start zookeeper %s: %w", m.Name, err)
			}
		}
		if err := m.start(); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, ZooKeeperStartTimeout)
	defer cancel()
	if err := z.waitServing(wctx, z.Members, true); err != nil {
		for _, m := range z.Members {
			if m.lostPort() {
				return nil, errors.Join(errPortInUse, err)
			}
		}
		return nil, err
	}
	return z, nil
}

// config is member m's zoo.cfg. Every port binds 127.0.0.1 only: the
// client port by clientPortAddress, the quorum and election ports by the
// address in each server line (quorumListenOnAllIPs is false by default),
// and the admin server (Jetty, 0.0.0.0:8080 by default) is off.
func (z *ZooKeeper) config(m *ZooKeeperMember) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	_, port, _ := net.SplitHostPort(m.Addr)
	p("# written by locksim for zookeeper %s", m.Name)
	p("tickTime=%d", z.TickTime.Milliseconds())
	p("initLimit=%d", zkInitLimit)
	p("syncLimit=%d", zkSyncLimit)
	p("minSessionTimeout=%d", z.MinSessionTimeout.Milliseconds())
	p("maxSessionTimeout=%d", z.MaxSessionTimeout.Milliseconds())
	p("dataDir=%s", filepath.Join(m.Dir, "data"))
	p("clientPort=%s", port)
	p("clientPortAddress=127.0.0.1")
	// Every client of a run connects from 127.0.0.1 (through its proxies):
	// no per-address limit (60 by default).
	p("maxClientCnxns=0")
	p("admin.enableServer=false")
	// srvr for the ready check (the only one allowed by default), ruok and
	// mntr for a person debugging a run.
	p("4lw.commands.whitelist=srvr,ruok,mntr")
	p("autopurge.purgeInterval=0")
	if len(z.Members) > 1 {
		for _, o := range z.Members {
			_, qp, _ := net.SplitHostPort(o.quorumAddr)
			_, ep, _ := net.SplitHostPort(o.electionAddr)
			p("server.%d=127.0.0.1:%s:%s", o.ID, qp, ep)
		}
	}
	return b.String()
}

func (m *ZooKeeperMember) start() error {
	if m.image != "" {
		// The JVM's stdout and stderr go to the same file as a local
		// member's (tail reads it; a port in use is found there).
		argv := append([]string{"sh", "-c", `exec "$@" >>"$0" 2>&1`, filepath.Join(m.Dir, zkStderrName)}, m.args...)
		c, err := startContainer(context.Background(), containerSpec{What: "zookeeper " + m.Name, Image: m.image,
			Argv: argv, WorkDir: m.Dir, Binds: []string{m.Dir + ":" + m.Dir}})
		if err != nil {
			return err
		}
		m.set(c)
		return nil
	}
	stderr, err := os.OpenFile(filepath.Join(m.Dir, zkStderrName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start zookeeper %s: %w", m.Name, err)
	}
	defer stderr.Close() // the child has its own copy
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	p, err := StartProc("zookeeper "+m.Name, cmd)
	if err != nil {
		return err
	}
	m.set(p)
	return nil
}

// Endpoints lists the members' client addresses.
func (z *ZooKeeper) Endpoints() []string {
	var out []string
	for _, m := range z.Members {
		out = append(out, m.Addr)
	}
	return out
}

// Member finds a member by name.
func (z *ZooKeeper) Member(name string) (*ZooKeeperMember, bool) {
	for _, m := range z.Members {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// Leader is the member that leads now (with one member, that member).
func (z *ZooKeeper) Leader() (*ZooKeeperMember, error) {
	var modes []string
	for _, m := range z.Members {
		mode, err := m.Mode()
		if mode == ZooKeeperLeader || mode == ZooKeeperStandalone {
			return m, nil
		}
		if err != nil {
			modes = append(modes, fmt.Sprintf("%s: %v", m.Name, err))
		} else {
			modes = append(modes, m.Name+": "+mode)
		}
	}
	return nil, fmt.Errorf("zookeeper: no leader (%s)", strings.Join(modes, "; "))
}

// Close kills every member and removes the ensemble's dir.
func (z *ZooKeeper) Close() {
	for _, m := range z.Members {
		m.Crash()
		if m.clock != nil {
			m.clock.Close()
		}
	}
	if z.dir != "" {
		RemoveTempDir(z.dir)
	}
}

// Reset readies the ensemble for the next trial: paused members resume,
// crashed ones restart, and every znode but ZooKeeper's own (/zookeeper)
// is deleted.
func (z *ZooKeeper) Reset(ctx context.Context) error {
	for _, m := range z.Members {
		if err := bringBack(ctx, m); err != nil {
			return err
		}
		if m.clock != nil {
			m.clock.Reset()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, ZooKeeperStartTimeout)
	defer cancel()
	if err := z.waitServing(wctx, z.Members, true); err != nil {
		return fmt.Errorf("reset zookeeper: %w", err)
	}
	c, err := z.Connect(wctx, 2*time.Second)
	if err != nil {
		return fmt.Errorf("reset zookeeper: %w", err)
	}
	defer c.Close()
	if err := zkDeleteChildren(c, "/"); err != nil {
		return fmt.Errorf("reset zookeeper: %w", err)
	}
	return nil
}

// zkDeleteChildren deletes every znode under path, depth first, except
// /zookeeper (the server's own, which refuses deletion).
func zkDeleteChildren(c *zk.Conn, path string) error {
	kids, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		child := strings.TrimSuffix(path, "/") + "/" + k
		if child == "/zookeeper" {
			continue
		}
		if err := zkDeleteChildren(c, child); err != nil {
			return err
		}
		if err := c.Delete(child, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete %s: %w", child, err)
		}
	}
	return nil
}

// zkQuiet is a go-zookeeper logger that says nothing (its default prints
// every connect and disconnect to stderr).
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// Connect opens a client session on the whole ensemble, straight to the
// members (never through a proxy), for resets, checks and tests, and waits
// until the session is established. The caller closes it.
func (z *ZooKeeper) Connect(ctx context.Context, sessionTimeout time.Duration) (*zk.Conn, error) {
	c, events, err := zk.Connect(z.Endpoints(), sessionTimeout, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() { // go-zookeeper drops events nobody reads; drain until Close
					for range events {
					}
				}()
				return c, nil
			}
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("zookeeper: no session on %v: %w", z.Endpoints(), ctx.Err())
		}
	}
}

// The modes a member's srvr reports.
const (
	ZooKeeperLeader     = "leader"
	ZooKeeperStandalone = "standalone"
)

// Mode asks the member (srvr, a four-letter word) whether it leads,
// follows or runs standalone. A member that is not serving (no quorum,
// electing, starting) is an error.
func (m *ZooKeeperMember) Mode() (string, error) {
	c, err := net.DialTimeout("tcp", m.Addr, 300*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c) // the member closes the connection after its answer
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("srvr: %s", strings.TrimSpace(string(b)))
}

// waitServing waits until each of ms serves and, if leader, until one of
// them leads (with one member: runs standalone).
func (z *ZooKeeper) waitServing(ctx context.Context, ms []*ZooKeeperMember, leader bool) error {
	for {
		var waiting []string
		for _, m := range ms {
			if p := m.Proc(); p == nil || p.Exited() {
				return fmt.Errorf("start zookeeper %s: the process exited\n%s", m.Name, m.tail())
			}
			if mode, err := m.Mode(); err != nil {
				waiting = append(waiting, fmt.Sprintf("%s: %v", m.Name, err))
			} else if m.peers > 1 && mode == ZooKeeperStandalone {
				return fmt.Errorf("start zookeeper %s: runs standalone in an ensemble of %d", m.Name, m.peers)
			}
		}
		if len(waiting) == 0 {
			if !leader {
				return nil
			}
			_, err := z.Leader()
			if err == nil {
				return nil
			}
			waiting = append(waiting, err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start zookeeper: not serving: %s\n%s", strings.Join(waiting, "; "), ms[0].tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail is the last lines of the member's log and stderr, for errors.
// lostPort says whether the member's logs say another process had its
// port: the JVM's BindException, whose message comes above a stack trace
// longer than tail's lines.
func (m *ZooKeeperMember) lostPort() bool {
	for _, name := range []string{zkLogName, zkStderrName} {
		if data, _ := os.ReadFile(filepath.Join(m.Dir, name)); bytes.Contains(data, []byte("Address already in use")) {
			return true
		}
	}
	return false
}

func (m *ZooKeeperMember) tail() string {
	var b strings.Builder
	for _, name := range []string{zkLogName, zkStderrName} {
		data, _ := os.ReadFile(filepath.Join(m.Dir, name))
		if s := lastLines(data, 10); s != "" {
			fmt.Fprintf(&b, "--- zookeeper %s: %s (last lines)\n%s\n", m.Name, name, s)
		}
	}
	return b.String()
}

// Restart starts the member again with the same ports and data dir and
// waits until it serves again (a follower has rejoined the ensemble and
// synced with its leader).
// Clock is the control file of the member's clock shim, nil when it runs
// without one (ZooKeeperOptions.ClockShim).
func (m *ZooKeeperMember) Clock() *clockshim.Control { return m.clock }

// LoseDisk kills the member (kill -9) and empties its data dir as a
// replaced disk leaves it: its transaction log and snapshots are gone, its
// myid (the member's identity, which an operator writes again) stays.
// Restart brings it back empty; it answers clients only once it has
// synced with the ensemble's leader.
func (m *ZooKeeperMember) LoseDisk() error {
	m.Crash()
	data := filepath.Join(m.Dir, "data")
	entries, err := os.ReadDir(data)
	if err != nil {
		return fmt.Errorf("disk loss on zookeeper %s: %w", m.Name, err)
	}
	for _, e := range entries {
		if e.Name() == "myid" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(data, e.Name())); err != nil {
			return fmt.Errorf("disk loss on zookeeper %s: %w", m.Name, err)
		}
	}
	return nil
}

func (m *ZooKeeperMember) Restart(ctx context.Context) error {
	m.Crash()
	if err := m.start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, ZooKeeperStartTimeout)
	defer cancel()
	return (&ZooKeeper{}).waitServing(wctx, []*ZooKeeperMember{m}, false)
}
