package env

// Redis Sentinel (Debian's redis-sentinel, 7.0): three (or any number of)
// sentinel processes on 127.0.0.1 that monitor a primary, agree that it is
// down, elect one of themselves and promote a replica: the real failover,
// with its own timing and its own choice, where redis-failover's harness
// promotes the replica itself.
//
// Addresses: every sentinel binds 127.0.0.1 and announces 127.0.0.1
// (sentinel announce-ip) in the hello messages through which sentinels
// find each other on the primary's __sentinel__:hello channel, so no
// address of another interface ever enters their tables. The primary and
// its replicas are named by IP (127.0.0.1), never by host name: Sentinel
// 7.0 resolves host names only with `sentinel resolve-hostnames yes`, and
// announces them only with `sentinel announce-hostnames yes`; both stay
// off (their default), so an address a client gets from
// SENTINEL get-master-addr-by-name is always an IP. A replica is known to
// the sentinels by the address it connected to the primary from
// (127.0.0.1) and its own port (replica-announce-port defaults to it).
//
// Sentinel rewrites its config file (CONFIG REWRITE of the sentinels and
// replicas it has found, and the epoch), so each sentinel has its own, in
// its own dir; a restarted sentinel starts from what it wrote. On the
// docker backend (SentinelOptions.Image) each sentinel runs in a container
// of the image with that dir mounted at its host path, so the rewrites
// land where a restart finds them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrSentinelNotFound says redis-sentinel is not installed.
var ErrSentinelNotFound = errors.New("redis-sentinel not found: apt-get install redis-sentinel")

// SentinelStartTimeout bounds how long StartSentinel waits for the
// sentinels to find the primary, its replicas and each other (they
// announce themselves every 2 s).
const SentinelStartTimeout = 15 * time.Second

// DefaultSentinelImage is the docker backend's default Sentinel image
// (built by `make docker` from Debian's redis-sentinel package, as
// DefaultRedisImage is).
const DefaultSentinelImage = "locksim/sentinel:bookworm"

// Defaults of SentinelOptions.
const (
	DefaultSentinelMaster = "locksim"
	// DefaultSentinelDownAfter is down-after-milliseconds: how long a
	// sentinel waits for a PING reply before it calls the primary down
	// (subjectively; a failover needs Quorum sentinels to agree). Redis
	// ships 30 s; 300 ms is a few hundred loopback round trips, short
	// enough for a story and long enough that a busy machine does not make
	// a live primary look dead.
	DefaultSentinelDownAfter = 300 * time.Millisecond
	// DefaultSentinelFailoverTimeout is failover-timeout: a failed failover
	// is tried again after twice this (a split vote among the sentinels),
	// and the replicas' reconfiguration is bounded by it. Redis ships 3 min.
	DefaultSentinelFailoverTimeout = 2 * time.Second
)

// SentinelOptions says how to start Sentinel over a primary.
type SentinelOptions struct {
	// Primary is the monitored primary's host:port (an env.Redis's Addr,
	// on 127.0.0.1); it must be set.
	Primary string
	// MasterName is the name the sentinels know the primary by (SENTINEL
	// MONITOR's, and go-redis's FailoverOptions.MasterName); default
	// DefaultSentinelMaster.
	MasterName string
	// Sentinels is how many sentinels to start; default 3.
	Sentinels int
	// Quorum is how many sentinels must agree the primary is down before
	// one of them may fail it over (it must also win the votes of a
	// majority of all sentinels); default a majority, 2 of 3.
	Quorum int
	// DownAfter is down-after-milliseconds; default DefaultSentinelDownAfter.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout; default DefaultSentinelFailoverTimeout.
	FailoverTimeout time.Duration
	// Replicas is how many of the primary's replicas every sentinel must
	// have found before StartSentinel returns (a failover promotes only a
	// replica the sentinels know).
	Replicas int
	// Dir is the parent dir; each sentinel works in Dir/sentinel-<n>.
	// Empty: a new temp dir that Close removes.
	Dir string
	// Image, if set, runs each sentinel in a container of this image (the
	// docker backend: host network, its dir mounted at its host path)
	// instead of as a local process. The image needs redis-sentinel, or a
	// redis-server to run with --sentinel, on its PATH.
	Image string
}

// Sentinel is a group of real redis-sentinel processes on 127.0.0.1
// monitoring one primary, each killed with the harness.
type Sentinel struct {
	// MasterName is the name they monitor the primary by.
	MasterName string
	Nodes      []*SentinelNode
	opts       SentinelOptions
	tempDir    string // made by StartSentinel, removed by Close
}

// SentinelNode is one sentinel.
type SentinelNode struct {
	// Name is its number, "1".."n".
	Name string
	Addr string // 127.0.0.1:Port
	Port int
	// Dir holds its config (which it rewrites) and its log.
	Dir string

	image string // SentinelOptions.Image

	serverProc
	mu     sync.Mutex
	client *redis.SentinelClient
}

func sentinelPath() (string, error) { return debianBinary("redis-sentinel", ErrSentinelNotFound) }

// StartSentinel starts o.Sentinels sentinels on free ports of 127.0.0.1
// monitoring o.Primary, and waits until each knows the primary, the other
// sentinels and o.Replicas replicas.
func StartSentinel(ctx context.Context, o SentinelOptions) (_ *Sentinel, err error) {
	host, _, err := net.SplitHostPort(o.Primary)
	if err != nil {
		return nil, fmt.Errorf("start sentinel: primary %q: %w", o.Primary, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("start sentinel: primary %q: want an address on 127.0.0.1", o.Primary)
	}
	if o.MasterName == "" {
		o.MasterName = DefaultSentinelMaster
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.Quorum == 0 {
		o.Quorum = o.Sentinels/2 + 1
	}
	if o.DownAfter == 0 {
		o.DownAfter = DefaultSentinelDownAfter
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = DefaultSentinelFailoverTimeout
	}
	switch {
	case o.Sentinels < 1:
		return nil, fmt.Errorf("start sentinel: %d sentinels", o.Sentinels)
	case o.Quorum < 1 || o.Quorum > o.Sentinels:
		return nil, fmt.Errorf("start sentinel: quorum %d of %d sentinels", o.Quorum, o.Sentinels)
	case o.DownAfter < time.Millisecond || o.FailoverTimeout < time.Millisecond:
		return nil, fmt.Errorf("start sentinel: down-after %v, failover-timeout %v (want at least 1ms)", o.DownAfter, o.FailoverTimeout)
	case o.Replicas < 0:
		return nil, fmt.Errorf("start sentinel: %d replicas", o.Replicas)
	}
	bin := ""
	if o.Image == "" {
		if bin, err = sentinelPath(); err != nil {
			return nil, err
		}
	}
	s := &Sentinel{MasterName: o.MasterName, opts: o}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if o.Dir == "" {
		if s.tempDir, err = TempDir("locksim-sentinel-"); err != nil {
			return nil, fmt.Errorf("start sentinel: %w", err)
		}
		o.Dir = s.tempDir
	}
	for i := 1; i <= o.Sentinels; i++ {
		name := strconv.Itoa(i)
		dir, err := filepath.Abs(filepath.Join(o.Dir, "sentinel-"+name))
		if err != nil {
			return nil, fmt.Errorf("start sentinel %s: %w", name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("start sentinel %s: %w", name, err)
		}
		n := &SentinelNode{Name: name, Dir: dir, image: o.Image, serverProc: serverProc{what: "sentinel " + name}}
		s.Nodes = append(s.Nodes, n)
		err = onFreePort(ctx, func(port int) error {
			n.Port, n.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			if err := os.WriteFile(n.confPath(), []byte(s.config(n)), 0o644); err != nil {
				return err
			}
			return n.start(ctx, bin)
		})
		if err != nil {
			return nil, fmt.Errorf("start sentinel %s: %w", name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, SentinelStartTimeout)
	defer cancel()
	if err := s.waitReady(wctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (n *SentinelNode) confPath() string { return filepath.Join(n.Dir, "sentinel.conf") }

// LogPath is the sentinel's log: +sdown, +odown, the vote, +switch-master,
// each with a millisecond timestamp.
func (n *SentinelNode) LogPath() string { return filepath.Join(n.Dir, "sentinel.log") }

func (s *Sentinel) config(n *SentinelNode) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	host, port, _ := net.SplitHostPort(s.opts.Primary)
	m := s.MasterName
	p("# written by locksim for sentinel %s; the sentinel rewrites it", n.Name)
	p("bind 127.0.0.1")
	p("port %d", n.Port)
	p("dir %q", n.Dir)
	p("daemonize no")
	p("logfile %q", n.LogPath())
	p("sentinel announce-ip 127.0.0.1")
	p("sentinel resolve-hostnames no")
	p("sentinel announce-hostnames no")
	p("sentinel monitor %s %s %s %d", m, host, port, s.opts.Quorum)
	p("sentinel down-after-milliseconds %s %d", m, s.opts.DownAfter.Milliseconds())
	p("sentinel failover-timeout %s %d", m, s.opts.FailoverTimeout.Milliseconds())
	p("sentinel parallel-syncs %s 1", m)
	return b.String()
}

// sentinelInImage starts the image's sentinel on the config file ($0),
// its output appended to $1: redis-sentinel, or redis-server in sentinel
// mode (the same binary).
const sentinelInImage = `out=$1; if s=$(command -v redis-sentinel); then set -- "$s" "$0"; ` +
	`elif s=$(command -v redis-server); then set -- "$s" "$0" --sentinel; ` +
	`else echo "neither redis-sentinel nor redis-server is on the image's PATH" >>"$out"; exit 127; fi; ` +
	`exec "$@" >>"$out" 2>&1`

// start starts the sentinel on its config and waits until it answers PING.
func (n *SentinelNode) start(ctx context.Context, bin string) error {
	stderrPath := filepath.Join(n.Dir, "sentinel.stderr")
	logStart := redisFileSize(n.LogPath())
	var p process
	if n.image != "" {
		c, err := startContainer(ctx, containerSpec{What: "sentinel " + n.Name, Image: n.image,
			Argv: []string{"sh", "-c", sentinelInImage, n.confPath(), stderrPath}, WorkDir: n.Dir,
			Binds: []string{n.Dir + ":" + n.Dir}})
		if err != nil {
			return err
		}
		p = c
	} else {
		stderr, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("start sentinel %s: %w", n.Name, err)
		}
		cmd := exec.Command(bin, n.confPath())
		cmd.Dir = n.Dir
		cmd.Stdout, cmd.Stderr = stderr, stderr
		proc, err := StartProc("sentinel "+n.Name, cmd)
		stderr.Close() // the child has its own copy
		if err != nil {
			return err
		}
		p = proc
	}
	n.set(p)
	if err := redisWaitPing(ctx, n.Addr, p, RedisStartTimeout); err != nil {
		p.Kill()
		newLog := redisTailFrom(n.LogPath(), logStart)
		e := fmt.Errorf("start sentinel %s on %s: %w\n%s", n.Name, n.Addr, err, n.tail())
		if strings.Contains(newLog, "Address already in use") {
			return errors.Join(errPortInUse, e)
		}
		return e
	}
	return nil
}

func (n *SentinelNode) tail() string {
	var b strings.Builder
	for _, f := range []string{n.LogPath(), filepath.Join(n.Dir, "sentinel.stderr")} {
		if s := redisLastLines(f, 15); s != "" {
			fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", f, s)
		}
	}
	return b.String()
}

// Client is a Sentinel client straight to this sentinel (never through a
// proxy). It survives Restart.
func (n *SentinelNode) Client() *redis.SentinelClient {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.client == nil {
		n.client = redis.NewSentinelClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second,
			ReadTimeout: time.Second, WriteTimeout: time.Second, DisableIdentity: true})
	}
	return n.client
}

// Restart starts the sentinel again on the same port, from the config it
// rewrote (the sentinels, replicas and epoch it knew), and waits for PING.
func (n *SentinelNode) Restart(ctx context.Context) error {
	n.Crash()
	bin := ""
	if n.image == "" {
		var err error
		if bin, err = sentinelPath(); err != nil {
			return err
		}
	}
	return n.start(ctx, bin)
}

// waitReady waits until every sentinel reports the primary it was given
// as up, with the others sentinels and o.Replicas replicas found.
func (s *Sentinel) waitReady(ctx context.Context) error {
	want := s.opts.Primary
	for {
		var waiting []string
		for _, n := range s.Nodes {
			if p := n.Proc(); p == nil || p.Exited() {
				return fmt.Errorf("start sentinel %s: the process exited\n%s", n.Name, n.tail())
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			m, err := n.Client().Master(rctx, s.MasterName).Result()
			cancel()
			if err != nil {
				waiting = append(waiting, fmt.Sprintf("%s: %v", n.Name, err))
				continue
			}
			addr := net.JoinHostPort(m["ip"], m["port"])
			others, _ := strconv.Atoi(m["num-other-sentinels"])
			replicas, _ := strconv.Atoi(m["num-slaves"])
			if addr != want || m["flags"] != "master" || others != len(s.Nodes)-1 || replicas < s.opts.Replicas {
				waiting = append(waiting, fmt.Sprintf("%s: primary %s (%s), %d other sentinels, %d replicas",
					n.Name, addr, m["flags"], others, replicas))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start sentinel: not ready (want primary %s, %d other sentinels, %d replicas): %s\n%s",
				want, len(s.Nodes)-1, s.opts.Replicas, strings.Join(waiting, "; "), s.Nodes[0].tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Addrs lists the sentinels' addresses (go-redis's FailoverOptions.SentinelAddrs).
func (s *Sentinel) Addrs() []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// Primary asks every running sentinel for the primary's address (SENTINEL
// get-master-addr-by-name) and returns it when they all agree. During a
// failover they may not: the error names each one's answer.
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	answers := map[string][]string{}
	var errs []string
	for _, n := range s.Nodes {
		if !n.Running() || n.Paused() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		a, err := n.Client().GetMasterAddrByName(rctx, s.MasterName).Result()
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("sentinel %s: %v", n.Name, err))
		case len(a) != 2:
			errs = append(errs, fmt.Sprintf("sentinel %s: %v", n.Name, a))
		default:
			addr := net.JoinHostPort(a[0], a[1])
			answers[addr] = append(answers[addr], n.Name)
		}
	}
	if len(errs) == 0 && len(answers) == 1 {
		for addr := range answers {
			return addr, nil
		}
	}
	for addr, names := range answers {
		errs = append(errs, fmt.Sprintf("sentinels %s: %s", strings.Join(names, ","), addr))
	}
	if len(errs) == 0 {
		return "", errors.New("sentinel: none is running")
	}
	return "", fmt.Errorf("sentinel: no single primary: %s", strings.Join(errs, "; "))
}

// Close kills every sentinel, closes the clients and removes the temp dir
// StartSentinel made (a caller's Dir stays).
func (s *Sentinel) Close() {
	for _, n := range s.Nodes {
		n.Crash()
		n.mu.Lock()
		if n.client != nil {
			_ = n.client.Close()
			n.client = nil
		}
		n.mu.Unlock()
	}
	if s.tempDir != "" {
		RemoveTempDir(s.tempDir)
	}
}
