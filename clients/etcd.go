package clients

// etcd's lock recipe (go.etcd.io/etcd/client/v3/concurrency): a Mutex is a
// key under the lock's prefix, attached to the session's lease; the oldest
// key (lowest create revision) holds the lock. The lease lives while the
// session's keepalive reaches the cluster: a holder that is paused, or cut
// off, for longer than the lease's TTL loses the lock without knowing it
// (Jepsen, "etcd 3.4.3", 2020, https://jepsen.io/analyses/etcd-3.4.3,
// section "Locks"). The revision at which the holder's key was created
// rises with every grant: a fencing token (Martin Kleppmann, "How to do
// distributed locking", 2016, section "Making the lock safe with fencing").

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locksim/locksim/history"
)

// EtcdBackend is etcd: a cluster of the scenario's nodes as members (A,
// B, C...), in Config.Servers[EtcdBackend].
const EtcdBackend Backend = "etcd"

func init() {
	// MinTTL: etcd grants no lease shorter than 3/2 of its election
	// timeout (1s by default, so 1.5s), rounded up to whole seconds: a
	// lease asked for 1s lasts 2s (etcd's lessor, minLeaseTTL).
	Register(Spec{Name: "etcd", Backend: EtcdBackend, Fences: true, NoExpiry: true, MinTTL: 2 * time.Second, Waits: true,
		Promises: etcdPromises,
		Doc:      "etcd clientv3 concurrency.Mutex (TryLock; Lock when the acquire waits) on a session lease kept alive in the background; the lock key's revision is its fencing token",
		New:      func(cfg Config) (Lock, error) { return NewEtcd(cfg) }})
}

// EtcdPrefix is where the lock keys live.
const EtcdPrefix = "/locksim/lock/"

// Etcd is a lock client over etcd's concurrency.Mutex, one session (and
// lease) per lease it grants.
type Etcd struct {
	cfg  Config
	mu   sync.Mutex
	cli  *clientv3.Client
	held map[string]*etcdHold // lease token (the mutex's key) -> hold
}

type etcdHold struct {
	sess  *concurrency.Session
	mutex *concurrency.Mutex
	rev   int64
}

// NewEtcd makes an etcd lock client on cfg's etcd members; it connects on
// first use.
func NewEtcd(cfg Config) (*Etcd, error) {
	if len(cfg.Servers[EtcdBackend]) == 0 {
		return nil, errors.New("etcd: no etcd members configured")
	}
	return &Etcd{cfg: cfg, held: map[string]*etcdHold{}}, nil
}

func (e *Etcd) client() (*clientv3.Client, error) {
	if e.cli != nil {
		return e.cli, nil
	}
	var eps []string
	for _, n := range e.cfg.Servers[EtcdBackend] {
		eps = append(eps, n.Addr)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: e.cfg.Timeout(), Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	e.cli = cli
	return cli, nil
}

// opTimeout bounds one call of the lock: a request to the cluster and
// the client's retries of it (clientv3 retries an unavailable cluster for
// as long as its context lets it). Past it, the outcome is unknown.
func (e *Etcd) opTimeout() time.Duration { return 10 * e.cfg.Timeout() }

// try runs one request, again on a fresh attempt while its own short
// deadline runs out and ctx's does not: clientv3 sends each attempt to the
// next member, so a member cut off by a partition (its connection still
// open, no answer ever) costs one attempt, not the whole call. Every
// request tried here is safe to repeat.
func (e *Etcd) try(ctx context.Context, req func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 3*e.cfg.Timeout())
		err := req(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil || !timedOut || ctx.Err() != nil {
			return err
		}
	}
}

// Warm connects to the cluster before the story starts.
func (e *Etcd) Warm(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*e.opTimeout())
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	cli, err := e.client()
	if err != nil {
		return err
	}
	_, err = cli.Get(ctx, "locksim-warm")
	return err
}

// ttlSeconds rounds a TTL up to etcd's whole seconds (at least 1; the
// server may raise it to its own minimum, which the grant reports).
func ttlSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Second-1)/time.Second))
}

// Acquire grants a lease of ttl (whole seconds), starts its keepalive and
// tries the mutex once: held elsewhere is a refusal (held).
func (e *Etcd) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, 0)
}

// AcquireWait is Acquire with the mutex's Lock, which waits up to wait
// for the keys ahead of its own to go, and then checks that its own key
// is still there (its lease did not expire while it waited: the check
// etcd-io/etcd#11456 added, concurrency.ErrSessionExpired), a refusal
// (expired). Still held after wait: the outcome is unknown.
func (e *Etcd) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, wait)
}

func (e *Etcd) acquire(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opTimeout()+wait)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	start := Monotonic()
	cli, err := e.client()
	if err != nil {
		return Lease{}, err
	}
	var grant *clientv3.LeaseGrantResponse
	err = e.try(ctx, func(ctx context.Context) (err error) {
		grant, err = cli.Grant(ctx, ttlSeconds(ttl))
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("etcd acquire: lease grant: %w", err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithLease(grant.ID))
	if err != nil {
		e.revoke(cli, grant.ID)
		return Lease{}, fmt.Errorf("etcd acquire: session: %w", err)
	}
	m := concurrency.NewMutex(sess, EtcdPrefix+key)
	// TryLock is safe to try again: its key is the lease's, so a second
	// try finds the key the first one put, and goes on from there. Lock
	// (which waits) is not tried again.
	lock := func() error { return e.try(ctx, m.TryLock) }
	if wait > 0 {
		lock = func() error { return m.Lock(ctx) }
	}
	if err := lock(); err != nil {
		sess.Orphan()
		e.revoke(cli, grant.ID)
		switch {
		case errors.Is(err, concurrency.ErrLocked):
			return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "%v", err)
		case errors.Is(err, concurrency.ErrSessionExpired):
			return Lease{}, Refuse(ErrNotAcquired, history.ReasonExpired, "Mutex.Lock: %v (its lease expired while it waited)", err)
		}
		return Lease{}, fmt.Errorf("etcd acquire: %w", err)
	}
	rev := m.Header().Revision
	if wait > 0 {
		// Lock answers with the revision at which its turn came, not its
		// key's: a waiter's key was put when it began to wait. Release
		// and Extend compare the key's create revision, and the fence is it.
		g, err := cli.Get(ctx, m.Key())
		if err == nil && len(g.Kvs) == 0 {
			err = Refuse(ErrNotAcquired, history.ReasonExpired, "the lock key is gone as the wait ended (its lease expired)")
		}
		if err != nil {
			sess.Orphan()
			e.revoke(cli, grant.ID)
			return Lease{}, err
		}
		rev = g.Kvs[0].CreateRevision
	}
	e.held[m.Key()] = &etcdHold{sess: sess, mutex: m, rev: rev}
	// Validity 0: the client believes it holds the lock until it releases
	// it, as etcd's recipe has it; the session keeps the lease alive for as
	// long as the client runs and reaches the cluster, like a PostgreSQL
	// session (a paused or cut-off client loses it TTL later, unaware).
	return Lease{Key: key, Token: m.Key(), Fence: rev, Start: start}, nil
}

// revoke ends a lease in the background, bounded by the node timeout.
func (e *Etcd) revoke(cli *clientv3.Client, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeout())
	defer cancel()
	_, _ = cli.Revoke(ctx, id)
}

// Release deletes the lock key only if it is still this lease's (its
// create revision unchanged), then revokes the lease. A key that is gone
// (the lease expired) is a refusal (not-held).
func (e *Etcd) Release(ctx context.Context, l Lease) error {
	ctx, cancel := context.WithTimeout(ctx, e.opTimeout())
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.held[l.Token]
	if !ok {
		return ErrNotHeld
	}
	delete(e.held, l.Token)
	h.sess.Orphan() // stop the keepalive; the lease is revoked below
	cli, err := e.client()
	if err != nil {
		return err
	}
	var resp *clientv3.TxnResponse
	err = e.try(ctx, func(ctx context.Context) (err error) {
		resp, err = cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(l.Token), "=", h.rev)).
			Then(clientv3.OpDelete(l.Token)).Commit()
		return err
	})
	if err != nil {
		return fmt.Errorf("etcd release: %w", err)
	}
	e.revoke(cli, h.sess.Lease())
	if !resp.Succeeded {
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "the lock key is gone (its lease expired)")
	}
	return nil
}

// Extend renews the lease once (the session's keepalive also renews it in
// the background) and checks the lock key is still there.
func (e *Etcd) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opTimeout())
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.held[l.Token]
	if !ok {
		return Lease{}, ErrNotHeld
	}
	cli, err := e.client()
	if err != nil {
		return Lease{}, err
	}
	err = e.try(ctx, func(ctx context.Context) error {
		_, err := cli.KeepAliveOnce(ctx, h.sess.Lease())
		return err
	})
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the lease is gone: %v", err)
		}
		return Lease{}, fmt.Errorf("etcd extend: %w", err)
	}
	var get *clientv3.GetResponse
	err = e.try(ctx, func(ctx context.Context) (err error) {
		get, err = cli.Get(ctx, l.Token)
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("etcd extend: %w", err)
	}
	if len(get.Kvs) == 0 || get.Kvs[0].CreateRevision != h.rev {
		return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the lock key is gone")
	}
	return l, nil
}

// Close ends every session and the client.
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, h := range e.held {
		h.sess.Orphan()
	}
	e.held = map[string]*etcdHold{}
	if e.cli == nil {
		return nil
	}
	err := e.cli.Close()
	e.cli = nil
	return err
}
