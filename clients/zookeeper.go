package clients

// ZooKeeper's lock recipe (https://zookeeper.apache.org/doc/r3.8.0/recipes.html,
// "Locks"; Curator's InterProcessMutex is the same recipe), tried once:
// the client creates an ephemeral sequential znode under the lock's path;
// the lowest sequence number holds the lock. Where the recipe waits for
// the next-lower znode to go, this client does not: a client whose znode
// is not the lowest deletes it and is refused (held). The znode is
// ephemeral, so it lives as long as the session that created it, and the
// session lives while its client's pings reach the ensemble: a holder that
// is paused, or cut off, for longer than the session timeout loses the
// lock without knowing it, and another client gets it. That is Kleppmann's
// case against any lease ("How to do distributed locking", 2016, section
// "Protecting a resource with a lock"), and his answer, fencing, is built
// in: the zxid at which the holder's znode was created (czxid) rises with
// every grant ("the zxid or the znode version number as fencing token",
// section "Making the lock safe with fencing").
//
// # Sessions, suspended and lost
//
// Each granted lease has a session of its own (one go-zookeeper Conn),
// created by Acquire with the lease's ttl as its timeout (the ensemble
// clamps it to its [minSessionTimeout, maxSessionTimeout]: 0.4 s to 4 s on
// env.ZooKeeper's default tick), and closed by Release, which makes the
// ensemble delete the session's znodes at once. A refused or failed acquire
// closes its session too, so it leaves no znode behind.
//
// What the client does in each of go-zookeeper's session states
// (github.com/go-zookeeper/zk v1.0.4, conn.go):
//   - StateHasSession: the session is established. The Conn pings every
//     third of the timeout; a reply that takes longer than two thirds of it
//     ends the connection.
//   - StateDisconnected, then StateConnecting (Curator calls this
//     SUSPENDED): the connection broke (a crashed or paused member, a
//     partition). The Conn tries the members in turn; if one answers
//     before the session times out on the ensemble, the session and its
//     znode live on and nothing was lost. This client does not give the
//     lock up while suspended (Curator's documentation warns that a client
//     cannot be certain it still holds the lock while SUSPENDED): like etcd's lock, its lease has Validity 0 and the
//     client believes it holds the lock until it releases it. A client
//     that checks its lease before writing (check_lease) asks the session
//     (Lease.Live), and does not write while it is not established:
//     Curator's defence. Calls made
//     meanwhile fail with an unknown outcome (no server, connection
//     closed, or their deadline).
//   - StateExpired (Curator's LOST): on reconnecting, the ensemble said the
//     session had expired: the znode is gone and another client may hold
//     the lock. go-zookeeper then opens a new session on its own; this
//     client notes the loss (the expiry, or a session id that changed),
//     and the next Extend or Release of the lease is refused not-held. A
//     client paused past its session timeout learns of it only then:
//     whatever it wrote before that call, it wrote without the lock,
//     which only a fence (the czxid) can refuse.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locksim/locksim/history"
)

// ZooKeeperBackend is a ZooKeeper ensemble (package backends starts it).
const ZooKeeperBackend Backend = "zookeeper"

// ZooKeeperMinTTL is the shortest lease a ZooKeeper lock has: the
// ensemble grants sessions of at least env.ZooKeeperMinSessionTicks
// ticks of env.DefaultZooKeeperTick (TestZooKeeperMinTTL, in backends,
// holds the three together).
const ZooKeeperMinTTL = 400 * time.Millisecond

func init() {
	Register(Spec{Name: "zookeeper", Backend: ZooKeeperBackend, Fences: true, NoExpiry: true, MinTTL: ZooKeeperMinTTL,
		Promises: zookeeperPromises,
		Doc:      "ZooKeeper's lock recipe tried once (ephemeral sequential znode, lowest wins) on a session per lease; the znode's czxid is its fencing token",
		New: func(cfg Config) (Lock, error) {
			return NewZooKeeperLock(ZooKeeperConfig{Members: cfg.Servers[ZooKeeperBackend], NodeTimeout: cfg.NodeTimeout, ClientID: cfg.ClientID})
		}})
}

// ZooKeeperRoot is where the locks' znodes live: each lock is a persistent
// znode ZooKeeperRoot/<key>, its contenders' ephemeral sequential znodes
// are its children.
const ZooKeeperRoot = "/locksim/lock"

// DefaultZooKeeperSession is the session timeout asked for when Acquire's
// ttl is 0.
const DefaultZooKeeperSession = 2 * time.Second

// ZooKeeperConfig is what the ZooKeeper lock needs to connect.
type ZooKeeperConfig struct {
	// Members lists the ensemble's members (A, B, C...) as this client
	// reaches them (through its own proxies). The client connects to one
	// at a time, and to another when that one fails.
	Members []Node
	// NodeTimeout bounds a request to one member, as Config's does
	// (default 200ms); a call of the lock may take 10 times as long, and
	// at least twice the session timeout (a member that stopped answering
	// is given up on after two thirds of it).
	NodeTimeout time.Duration
	// ClientID is the client's number in the run; it is written into its
	// znodes (for a person reading the ensemble).
	ClientID int
	// LockDelay, when positive, is Chubby's lock-delay
	// (zookeeper_lockdelay.go): a lock whose holder failed stays taken
	// for this long after the holder's session ended. 0: none, the
	// recipe as it is.
	LockDelay time.Duration
}

// ZooKeeperLock is a lock client over ZooKeeper's lock recipe, one session
// per lease it grants.
type ZooKeeperLock struct {
	cfg     ZooKeeperConfig
	servers []string

	mu      sync.Mutex
	held    map[string]*zkSession // lease token (the znode's path) -> its session
	closing sync.WaitGroup        // sessions being closed in the background
}

// NewZooKeeperLock makes a ZooKeeper lock client on cfg.Members; it
// connects at each acquire.
func NewZooKeeperLock(cfg ZooKeeperConfig) (*ZooKeeperLock, error) {
	if len(cfg.Members) == 0 {
		return nil, errors.New("zookeeper: no members configured")
	}
	var servers []string
	for _, m := range cfg.Members {
		servers = append(servers, m.Addr)
	}
	return &ZooKeeperLock{cfg: cfg, servers: servers, held: map[string]*zkSession{}}, nil
}

func (z *ZooKeeperLock) nodeTimeout() time.Duration {
	return Config{NodeTimeout: z.cfg.NodeTimeout}.Timeout()
}

// opTimeout bounds one call of the lock on a session of timeout session:
// go-zookeeper's requests have no deadline of their own.
func (z *ZooKeeperLock) opTimeout(session time.Duration) time.Duration {
	return max(10*z.nodeTimeout(), 2*session)
}

// zkSession is one go-zookeeper Conn and what its events said.
type zkSession struct {
	conn    *zk.Conn
	timeout time.Duration
	ready   chan struct{} // closed at the first StateHasSession
	once    sync.Once
	expired atomic.Bool // the ensemble said the session expired
	sid     int64       // the session's id once ready
	// delay is the lease's lock-delay session and delayPath its znode
	// (nil without a lock-delay; zookeeper_lockdelay.go).
	delay     *zkSession
	delayPath string
}

// lost says whether the session the lease was granted on is gone: the
// ensemble expired it, or go-zookeeper has since opened another.
func (s *zkSession) lost() bool {
	return s.expired.Load() || s.conn.SessionID() != s.sid
}

// zkSilent is a go-zookeeper logger that says nothing (the default one
// prints every connect and disconnect to stderr).
type zkSilent struct{}

func (zkSilent) Printf(string, ...any) {}

// connect opens a session with timeout and waits until it is established.
func (z *ZooKeeperLock) connect(ctx context.Context, timeout time.Duration) (*zkSession, error) {
	s := &zkSession{timeout: timeout, ready: make(chan struct{})}
	events := func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		switch ev.State {
		case zk.StateHasSession:
			s.once.Do(func() { close(s.ready) })
		case zk.StateExpired:
			s.expired.Store(true)
		}
	}
	conn, _, err := zk.Connect(z.servers, timeout, zk.WithLogger(zkSilent{}), zk.WithLogInfo(false),
		zk.WithEventCallback(events))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	s.conn = conn
	select {
	case <-s.ready:
		s.sid = conn.SessionID()
		return s, nil
	case <-ctx.Done():
		z.closeSession(s)
		return nil, fmt.Errorf("zookeeper: no session with %v: %w", z.servers, ctx.Err())
	}
}

// closeSession ends s in the background (go-zookeeper's Close waits up to
// a few seconds for the ensemble's answer): the ensemble then deletes the
// session's znodes, or, unreachable, expires the session later.
func (z *ZooKeeperLock) closeSession(s *zkSession) {
	z.closing.Add(1)
	go func() {
		defer z.closing.Done()
		s.conn.Close()
	}()
}

// zkCall runs a go-zookeeper request, bounded by ctx: past it the request
// goes on in the background (it ends when its connection does) and its
// outcome is unknown.
func zkCall[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// zkSeq is a contender znode's sequence number: the ten digits ZooKeeper
// appends to its name.
func zkSeq(name string) (int64, error) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, fmt.Errorf("zookeeper: %q is not a lock znode", name)
	}
	return strconv.ParseInt(name[i+len("lock-"):], 10, 64)
}

// Acquire opens a session of timeout ttl, creates its znode under the
// lock's path and holds the lock if that znode is the lowest; else it
// deletes it, closes the session and is refused (held). The lease's token
// is the znode's path, its fence the znode's czxid.
func (z *ZooKeeperLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if key == "" || strings.Contains(key, "/") {
		return Lease{}, fmt.Errorf("zookeeper acquire: key %q: want a non-empty name without /", key)
	}
	if ttl <= 0 {
		ttl = DefaultZooKeeperSession
	}
	ctx, cancel := context.WithTimeout(ctx, z.opTimeout(ttl))
	defer cancel()
	z.mu.Lock()
	defer z.mu.Unlock()
	start := Monotonic()
	s, err := z.connect(ctx, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("zookeeper acquire: %w", err)
	}
	lease, err := z.contend(ctx, s, key)
	if err != nil {
		z.closeSession(s)
		return Lease{}, err
	}
	if z.cfg.LockDelay > 0 {
		if err := z.holdDelay(ctx, s, key, lease.Token); err != nil {
			z.closeSession(s)
			return Lease{}, err
		}
	}
	lease.Start = start
	// A check of the lease (check_lease) asks the session: a client that
	// stops writing while its connection is suspended, as Curator's
	// documentation asks of a lock holder.
	lease.Live = func() bool { return s.conn.State() == zk.StateHasSession && !s.lost() }
	z.held[lease.Token] = s
	// Validity 0: the client believes it holds the lock until it releases
	// it, as the recipe has it; the session's pings keep the znode for as
	// long as the client runs and reaches the ensemble.
	return lease, nil
}

// contend creates s's znode for key and checks that it is the lowest.
func (z *ZooKeeperLock) contend(ctx context.Context, s *zkSession, key string) (Lease, error) {
	dir := ZooKeeperRoot + "/" + key
	data := []byte("client " + strconv.Itoa(z.cfg.ClientID))
	acl := zk.WorldACL(zk.PermAll)
	// The protected form names the znode with a random GUID and, when the
	// connection breaks before the reply, looks for it before creating
	// another, so a lost reply leaves no second znode in the queue.
	path, err := zkCall(ctx, func() (string, error) {
		p, err := s.conn.CreateProtectedEphemeralSequential(dir+"/lock-", data, acl)
		if !errors.Is(err, zk.ErrNoNode) {
			return p, err
		}
		if err := zkMakePath(s.conn, dir); err != nil {
			return "", err
		}
		return s.conn.CreateProtectedEphemeralSequential(dir+"/lock-", data, acl)
	})
	if err != nil {
		return Lease{}, fmt.Errorf("zookeeper acquire: create: %w", err)
	}
	mine, err := zkSeq(path)
	if err != nil {
		return Lease{}, err
	}
	// Our member has applied our create, so it has applied every create
	// ordered before it: no lower znode that exists can be missing here.
	kids, err := zkCall(ctx, func() ([]string, error) {
		kids, _, err := s.conn.Children(dir)
		return kids, err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("zookeeper acquire: children: %w", err)
	}
	first, firstSeq, delayed := "", mine, ""
	for _, k := range kids {
		if isDelayZnode(k) {
			delayed = k
			continue
		}
		n, err := zkSeq(k)
		if err != nil {
			return Lease{}, err
		}
		if n < firstSeq {
			first, firstSeq = k, n
		}
	}
	if first != "" || delayed != "" {
		_, _ = zkCall(ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(path, -1) })
		if first == "" {
			return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "%s is held: %s, the lock-delay of a holder whose session ended, is still there", key, delayed)
		}
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "%s is held: %s is first in line", key, first)
	}
	st, err := zkCall(ctx, func() (*zk.Stat, error) {
		ok, st, err := s.conn.Exists(path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	})
	if err != nil {
		// Our znode went between the create and now: the session expired.
		return Lease{}, fmt.Errorf("zookeeper acquire: the lock znode: %w", err)
	}
	return Lease{Key: key, Token: path, Fence: st.Czxid}, nil
}

// zkMakePath creates path and its parents as persistent znodes.
func zkMakePath(c *zk.Conn, path string) error {
	p := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		p += "/" + part
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// session finds the session of a lease this client granted (nil if none).
func (z *ZooKeeperLock) session(l Lease) *zkSession {
	return z.held[l.Token]
}

// Release deletes the lease's znode and closes its session. A lease whose
// session expired, or whose znode is gone, is refused (not-held).
func (z *ZooKeeperLock) Release(ctx context.Context, l Lease) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	s := z.session(l)
	if s == nil {
		return ErrNotHeld
	}
	delete(z.held, l.Token)
	defer z.closeSession(s)
	if s.lost() {
		z.dropDelay(s)
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "the session expired: its znode is gone")
	}
	ctx, cancel := context.WithTimeout(ctx, z.opTimeout(s.timeout))
	defer cancel()
	if err := z.releaseDelay(ctx, s); err != nil {
		return fmt.Errorf("zookeeper release: %w", err)
	}
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(l.Token, -1) })
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "the lock znode is gone (its session expired): %v", err)
	case err != nil:
		return fmt.Errorf("zookeeper release: %w", err)
	}
	return nil
}

// Extend checks that the lease still holds the lock: its session is the
// one it was granted on and its znode is there, owned by that session.
// The session's timeout cannot change (ttl is ignored); its pings renew it.
func (z *ZooKeeperLock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	s := z.session(l)
	if s == nil {
		return Lease{}, ErrNotHeld
	}
	if s.lost() {
		z.dropDelay(s)
		return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the session expired: its znode is gone")
	}
	ctx, cancel := context.WithTimeout(ctx, z.opTimeout(s.timeout))
	defer cancel()
	st, err := zkCall(ctx, func() (*zk.Stat, error) {
		ok, st, err := s.conn.Exists(l.Token)
		if err == nil && !ok {
			st = nil
		}
		return st, err
	})
	switch {
	case errors.Is(err, zk.ErrSessionExpired):
		return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the session expired: %v", err)
	case err != nil:
		return Lease{}, fmt.Errorf("zookeeper extend: %w", err)
	case st == nil || st.EphemeralOwner != s.sid || st.Czxid != l.Fence:
		return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the lock znode is gone")
	}
	return l, nil
}

// Close ends every session (the ensemble deletes their znodes) and waits,
// a few seconds at most, for the ensemble's answers.
func (z *ZooKeeperLock) Close() error {
	z.mu.Lock()
	for _, s := range z.held {
		z.dropDelay(s)
		z.closeSession(s)
	}
	z.held = map[string]*zkSession{}
	z.mu.Unlock()
	z.closing.Wait()
	return nil
}
