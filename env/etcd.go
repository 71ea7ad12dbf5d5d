package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locksim/locksim/clockshim"
)

// ErrEtcdNotFound says the etcd binary is not installed.
var ErrEtcdNotFound = errors.New("etcd not found: apt-get install etcd-server")

// EtcdStartTimeout bounds how long StartEtcd and a member's Restart wait
// for the cluster to answer.
const EtcdStartTimeout = 15 * time.Second

// DefaultEtcdImage is the docker backend's default etcd image (built by
// `make docker`, as DefaultRedisImage is).
const DefaultEtcdImage = "locksim/etcd:bookworm"

// EtcdOptions says how to start an etcd cluster.
type EtcdOptions struct {
	// Members is how many members (A, B, C...); default 1.
	Members int
	// Image, if set, runs each member in a container of this image (the
	// docker backend: host network, its dir mounted at its host path)
	// instead of as a local process. The image needs etcd on its PATH.
	Image string
	// Version is the etcd version a local member runs (EtcdBinary): ""
	// is Debian's, the default. Not with Image.
	Version string
}

// Etcd is a real etcd cluster (Debian's etcd-server, or a version
// make test-deps built: EtcdBinary) of one or more members, each a child
// process on 127.0.0.1 with its data dir on tmpfs, killed with the
// harness. etcd is a Go binary: it reads the clock through the vDSO, out
// of the LD_PRELOAD clock shim's reach. The builds of make test-deps carry
// locksim's clock hook in their Go runtime (EtcdClockHook), which reads
// the same control file: each of their members gets one (Clock), so a
// clock fault reaches them. Debian's takes none (EtcdClockless).
type Etcd struct {
	Members []*EtcdMember
	// Version is the version its members run ("3.4.23"); "" in
	// containers, whose image's etcd it does not ask.
	Version string
	dir     string
}

// EtcdMember is one member of an Etcd cluster. A crash (SIGKILL) keeps its
// data dir: etcd fsyncs its log before it answers, so a restarted member
// has everything it acknowledged.
type EtcdMember struct {
	Name string
	// Addr is the client URL's host:port.
	Addr string
	// Dir holds its data dir and log.
	Dir string

	peerAddr string
	args     []string
	image    string
	clock    *clockshim.Control // a build with the clock hook, local
	// cluster is the member's cluster; lost says its data dir is gone
	// (LoseDisk): its Restart replaces it.
	cluster *Etcd
	lost    bool

	serverProc
}

func etcdPath() (string, error) { return debianBinary("etcd", ErrEtcdNotFound) }

// member is a server of an ensemble that a fault may have paused or
// crashed: an etcd or a ZooKeeper member.
type member interface {
	Paused() bool
	Resume() error
	Running() bool
	Restart(ctx context.Context) error
}

// bringBack resumes m if it is paused and restarts it if it is down, for
// the next trial.
func bringBack(ctx context.Context, m member) error {
	if m.Paused() {
		if err := m.Resume(); err != nil {
			return err
		}
	}
	if !m.Running() {
		return m.Restart(ctx)
	}
	return nil
}

// debianBinary finds a server's binary on the PATH or where Debian's
// package puts it (/usr/bin: the PATH of a harness started by a service
// manager may lack it), or returns notFound.
func debianBinary(name string, notFound error) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/" + name); err == nil {
		return "/usr/bin/" + name, nil
	}
	return "", notFound
}

// StartEtcd starts a cluster of o.Members members on free ports of
// 127.0.0.1 and waits until it answers a read through every member.
func StartEtcd(ctx context.Context, o EtcdOptions) (_ *Etcd, err error) {
	if o.Members == 0 {
		o.Members = 1
	}
	if o.Members < 0 || o.Members > 26 {
		return nil, fmt.Errorf("start etcd: %d members (want 1 to 26)", o.Members)
	}
	bin, version := "etcd", ""
	switch {
	case o.Image != "" && o.Version != "":
		return nil, fmt.Errorf("start etcd: version %s is a local binary; a container runs its image's etcd", o.Version)
	case o.Image == "":
		if bin, err = EtcdBinary(o.Version); err != nil {
			return nil, err
		}
		if version, err = EtcdVersion(bin); err != nil {
			return nil, fmt.Errorf("start etcd: %w", err)
		}
	}
	dir, err := fastTempDir("locksim-etcd-")
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	e := &Etcd{dir: dir, Version: version}
	clocked := o.Image == "" && EtcdClockless(bin) == ""
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	var cluster []string
	for i := 0; i < o.Members; i++ {
		name := string(rune('A' + i))
		cport, err := freePort()
		if err != nil {
			return nil, err
		}
		pport, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &EtcdMember{Name: name, Dir: filepath.Join(dir, "etcd-"+name), image: o.Image, serverProc: serverProc{what: "etcd " + name},
			Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(cport)),
			peerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(pport))}
		if err := os.MkdirAll(m.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("start etcd %s: %w", name, err)
		}
		m.cluster = e
		e.Members = append(e.Members, m)
		if clocked {
			if m.clock, err = clockshim.NewControl(filepath.Join(m.Dir, "clock")); err != nil {
				return nil, fmt.Errorf("start etcd %s: %w", name, err)
			}
		}
		cluster = append(cluster, name+"=http://"+m.peerAddr)
	}
	for _, m := range e.Members {
		m.args = []string{bin,
			"--name", m.Name,
			"--data-dir", filepath.Join(m.Dir, "data"),
			"--listen-client-urls", "http://" + m.Addr,
			"--advertise-client-urls", "http://" + m.Addr,
			"--listen-peer-urls", "http://" + m.peerAddr,
			"--initial-advertise-peer-urls", "http://" + m.peerAddr,
			"--initial-cluster", strings.Join(cluster, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir),
			"--logger", "zap", "--log-outputs", filepath.Join(m.Dir, "etcd.log"),
		}
		if err := m.start(); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, EtcdStartTimeout)
	defer cancel()
	for _, m := range e.Members {
		if err := m.waitReady(wctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Endpoints lists the members' client addresses.
func (e *Etcd) Endpoints() []string {
	var out []string
	for _, m := range e.Members {
		out = append(out, m.Addr)
	}
	return out
}

// Member finds a member by name.
func (e *Etcd) Member(name string) (*EtcdMember, bool) {
	for _, m := range e.Members {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// Close kills every member and removes the cluster's dir.
func (e *Etcd) Close() {
	for _, m := range e.Members {
		m.Crash()
		if m.clock != nil {
			m.clock.Close()
		}
	}
	if e.dir != "" {
		RemoveTempDir(e.dir)
	}
}

// Reset readies the cluster for the next trial: paused members resume,
// crashed ones restart, their clocks run true again, and every key is
// deleted.
func (e *Etcd) Reset(ctx context.Context) error {
	for _, m := range e.Members {
		if err := bringBack(ctx, m); err != nil {
			return err
		}
		if m.clock != nil {
			m.clock.Reset()
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Delete(rctx, "", clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("reset etcd: %w", err)
	}
	return nil
}

func (e *Etcd) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

func (m *EtcdMember) start() error {
	if m.image != "" {
		c, err := startContainer(context.Background(), containerSpec{What: "etcd " + m.Name, Image: m.image,
			Argv: m.args, WorkDir: m.Dir, Binds: []string{m.Dir + ":" + m.Dir}})
		if err != nil {
			return err
		}
		m.set(c)
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(m.Dir, "etcd.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start etcd %s: %w", m.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Dir = m.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if m.clock != nil {
		cmd.Env = append(os.Environ(), clockshim.EnvFile+"="+m.clock.Path())
	}
	p, err := StartProc("etcd "+m.Name, cmd)
	if err != nil {
		return err
	}
	m.set(p)
	return nil
}

// waitReady waits until the member answers a serializable read (a member
// answers one as soon as it has joined, even without a leader: a linearizable
// read follows once the cluster has one).
func (m *EtcdMember) waitReady(ctx context.Context) error {
	var last error
	for {
		if p := m.Proc(); p == nil || p.Exited() {
			return fmt.Errorf("start etcd %s: the process exited\n%s", m.Name, m.tail())
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Addr}, DialTimeout: 500 * time.Millisecond, Logger: zap.NewNop()})
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err = c.Get(rctx, "locksim-ready")
			cancel()
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("start etcd %s on %s: not ready: %v\n%s", m.Name, m.Addr, last, m.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rejoin removes the member from its cluster and adds it again as a new
// one, through the other members, and sets its arguments to join the
// cluster as it now is. Each step is tried again until it is done or
// EtcdStartTimeout has passed, as an operator would: the leader may be
// the member that died (a request times out until another is elected),
// and etcd adds a voting member only once its leader has been connected
// to a quorum for a while ("unhealthy cluster" until then).
func (m *EtcdMember) rejoin(ctx context.Context) error {
	var others []string
	for _, o := range m.cluster.Members {
		if o != m {
			others = append(others, o.Addr)
		}
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: others, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("replace etcd %s: %w", m.Name, err)
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(ctx, EtcdStartTimeout)
	defer cancel()
	peer := "http://" + m.peerAddr
	for {
		// The member with this peer URL: the old one (started, named),
		// the new one (added, not started: no name yet), or none.
		// Each call gets a few seconds: one sent as the old leader died
		// may wait for it until the server's own timeout.
		actx, acancel := context.WithTimeout(rctx, 3*time.Second)
		list, err := c.MemberList(actx)
		at := -1
		if err == nil {
			for i, mm := range list.Members {
				if slices.Contains(mm.PeerURLs, peer) {
					at = i
				}
			}
			switch {
			case at >= 0 && list.Members[at].Name != "":
				_, err = c.MemberRemove(actx, list.Members[at].ID)
			case at < 0:
				_, err = c.MemberAdd(actx, []string{peer})
			default:
				var cluster []string
				for i, mm := range list.Members {
					name := mm.Name
					if i == at {
						name = m.Name
					}
					for _, u := range mm.PeerURLs {
						cluster = append(cluster, name+"="+u)
					}
				}
				m.setArg("--initial-cluster", strings.Join(cluster, ","))
				m.setArg("--initial-cluster-state", "existing")
				acancel()
				return nil
			}
		}
		acancel()
		if err == nil {
			continue // the next step
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("replace etcd %s: %w", m.Name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setArg sets the value that follows flag in the member's arguments.
func (m *EtcdMember) setArg(flag, value string) {
	for i := 0; i+1 < len(m.args); i++ {
		if m.args[i] == flag {
			m.args[i+1] = value
			return
		}
	}
}

func (m *EtcdMember) tail() string {
	b, _ := os.ReadFile(filepath.Join(m.Dir, "etcd.log"))
	return lastLines(b, 10)
}

// Clock is the control file of the member's clock hook, nil when its
// etcd has none (Debian's, or in a container).
func (m *EtcdMember) Clock() *clockshim.Control { return m.clock }

// LoseDisk kills the member (kill -9) and removes its data dir, as a
// dead drive or a machine rebuilt from its image leaves it. etcd does not
// take such a member back under its old identity (it finds the cluster
// has it already); Restart then replaces it as etcd's guide says.
func (m *EtcdMember) LoseDisk() error {
	m.Crash()
	if err := os.RemoveAll(filepath.Join(m.Dir, "data")); err != nil {
		return fmt.Errorf("disk loss on etcd %s: %w", m.Name, err)
	}
	m.lost = true
	return nil
}

// Restart starts the member again with the same ports and data dir and
// waits until it answers. A member whose disk was lost (LoseDisk) is
// replaced as etcd's runtime reconfiguration guide says for a failed
// machine: removed from the cluster, added again as a new member with the
// same name and addresses, and started with --initial-cluster-state
// existing, empty; it learns the cluster's data from its leader.
func (m *EtcdMember) Restart(ctx context.Context) error {
	m.Crash()
	if m.lost {
		if err := m.rejoin(ctx); err != nil {
			return err
		}
		m.lost = false
	}
	if err := m.start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, EtcdStartTimeout)
	defer cancel()
	return m.waitReady(wctx)
}
