package clients

// etcd's own Lock service (the v3lock gRPC API, v3lockpb.Lock, which
// etcd's server runs beside KV and Lease): a client grants a lease, keeps
// it alive, and sends LockRequest{name, lease}; the server runs
// clientv3's concurrency.Mutex.Lock for it, on that lease, and answers
// once the client holds the lock, with the lock key, which UnlockRequest
// deletes. This is the API of etcd-io/etcd#9921 ("Lock response when
// lease has expired", 2018): a waiter whose lease expired while it waited
// is still answered, holding the lock. Checked on etcd 3.4.23 (Debian's
// etcd-server, the one locksim starts): it still answers so, where
// clientv3's own Mutex.Lock (v3.7.3, lock etcd) refuses with
// ErrSessionExpired (the check etcd-io/etcd#11456 added on the client).
//
// The server module (go.etcd.io/etcd/server/v3, which has v3lockpb) is
// not among locksim's dependencies: the two messages, a field or two
// each, are written and read here with protowire over the client's own
// gRPC connection.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "etcd-lock-service", Like: "etcd", Backend: EtcdBackend, Fences: true, NoExpiry: true, MinTTL: 2 * time.Second, Waits: true,
		Promises: etcdLockServicePromises,
		Doc:      "etcd's own Lock service (the server's v3lock gRPC API) on a lease the client keeps alive; its acquire tries for the node timeout, or waits; the lock key's create revision is its fencing token",
		New: func(cfg Config) (Lock, error) {
			e, err := NewEtcd(cfg)
			if err != nil {
				return nil, err
			}
			return &EtcdLockService{Etcd: e, leases: map[string]*lockServiceHold{}}, nil
		}})
}

// EtcdLockService is a lock client over etcd's Lock service.
type EtcdLockService struct {
	*Etcd  // the connection, its bounds and Warm
	lmu    sync.Mutex
	leases map[string]*lockServiceHold // lock key -> hold
}

type lockServiceHold struct {
	lease clientv3.LeaseID
	stop  context.CancelFunc // ends the keepalive
}

// rawCodec passes the messages' bytes through: they are encoded here.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// lockRequest is v3lockpb.LockRequest{Name: 1, Lease: 2}.
func lockRequest(name string, lease clientv3.LeaseID) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte(name))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(lease))
}

// unlockRequest is v3lockpb.UnlockRequest{Key: 1}.
func unlockRequest(key string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, []byte(key))
}

// lockResponseKey reads v3lockpb.LockResponse's Key (field 2).
func lockResponseKey(b []byte) (string, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", protowire.ParseError(m)
			}
			return string(v), nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", protowire.ParseError(m)
		}
		b = b[m:]
	}
	return "", errors.New("LockResponse without a key")
}

func (e *EtcdLockService) call(ctx context.Context, method string, in []byte) ([]byte, error) {
	var out []byte
	err := e.cli.ActiveConnection().Invoke(ctx, "/v3lockpb.Lock/"+method, &in, &out, grpc.ForceCodec(rawCodec{}))
	return out, err
}

// Acquire grants a lease of ttl, keeps it alive and asks the Lock service
// for the lock, for as long as the node timeout: the service has no try,
// so a lock still held then is a refusal (held) when another key is
// there, else the outcome is unknown.
func (e *EtcdLockService) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, 0)
}

// AcquireWait asks the Lock service for the lock and waits up to wait for
// its answer.
func (e *EtcdLockService) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, wait)
}

func (e *EtcdLockService) acquire(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	start := Monotonic()
	e.mu.Lock()
	cli, err := e.client()
	e.mu.Unlock()
	if err != nil {
		return Lease{}, err
	}
	gctx, cancel := context.WithTimeout(ctx, e.opTimeout())
	defer cancel()
	var grant *clientv3.LeaseGrantResponse
	err = e.try(gctx, func(ctx context.Context) (err error) {
		grant, err = cli.Grant(ctx, ttlSeconds(ttl))
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("etcd acquire: lease grant: %w", err)
	}
	// The keepalive runs from the grant, as a session's does; a paused
	// client's stops with it.
	kctx, stop := context.WithCancel(context.Background())
	alive, err := cli.KeepAlive(kctx, grant.ID)
	if err != nil {
		stop()
		e.revoke(cli, grant.ID)
		return Lease{}, fmt.Errorf("etcd acquire: keepalive: %w", err)
	}
	go func() {
		for range alive {
		}
	}()
	name := EtcdPrefix + key
	bound := e.cfg.Timeout()
	if wait > 0 {
		bound = wait
	}
	lctx, lcancel := context.WithTimeout(ctx, bound)
	defer lcancel()
	out, err := e.call(lctx, "Lock", lockRequest(name, grant.ID))
	if err != nil {
		stop()
		e.revoke(cli, grant.ID) // the server deletes the waiter's key with it
		if st, ok := status.FromError(err); ok && st.Message() == concurrency.ErrSessionExpired.Error() {
			// The server's Mutex.Lock (etcd 3.5+) found the waiter's key
			// gone with its lease, and did not grant it: a refusal.
			return Lease{}, Refuse(ErrNotAcquired, history.ReasonExpired, "the Lock service: %s (its lease expired while it waited)", st.Message())
		}
		if lctx.Err() != nil && ctx.Err() == nil {
			gctx, cancel := context.WithTimeout(ctx, e.opTimeout())
			defer cancel()
			if get, gerr := cli.Get(gctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); gerr == nil && get.Count > 0 {
				return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "the Lock service had not answered after %v: another key holds %s", bound, name)
			}
		}
		return Lease{}, fmt.Errorf("etcd Lock service: %w", err)
	}
	k, err := lockResponseKey(out)
	if err != nil {
		stop()
		e.revoke(cli, grant.ID)
		return Lease{}, fmt.Errorf("etcd Lock service: %w", err)
	}
	// The fencing token is the lock key's create revision, as lock etcd's
	// (the response's header is the revision at which the service last
	// read, not the key's): read once granted. A key already gone (the
	// service answered on a lease that had expired) has none.
	var fence int64
	if get, err := cli.Get(gctx, k); err == nil && len(get.Kvs) > 0 {
		fence = get.Kvs[0].CreateRevision
	}
	e.leases[k] = &lockServiceHold{lease: grant.ID, stop: stop}
	// Validity 0: held until released, as the service has it, while the
	// keepalive reaches the cluster.
	return Lease{Key: key, Token: k, Fence: fence, Start: start}, nil
}

// Release asks the Lock service to delete the lock key, then revokes the
// lease. The service deletes the key whatever it holds and says nothing
// of it: a key already gone (its lease expired) is a refusal (not-held),
// read before the request.
func (e *EtcdLockService) Release(ctx context.Context, l Lease) error {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	h, ok := e.leases[l.Token]
	if !ok {
		return ErrNotHeld
	}
	delete(e.leases, l.Token)
	h.stop()
	ctx, cancel := context.WithTimeout(ctx, e.opTimeout())
	defer cancel()
	cli := e.cli
	defer e.revoke(cli, h.lease)
	get, err := cli.Get(ctx, l.Token, clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcd release: %w", err)
	}
	if get.Count == 0 {
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "the lock key %s is gone (its lease expired)", l.Token)
	}
	if _, err := e.call(ctx, "Unlock", unlockRequest(l.Token)); err != nil {
		return fmt.Errorf("etcd Lock service: unlock: %w", err)
	}
	return nil
}

// Extend renews the lease once (the keepalive renews it too).
func (e *EtcdLockService) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	h, ok := e.leases[l.Token]
	if !ok {
		return Lease{}, ErrNotHeld
	}
	ctx, cancel := context.WithTimeout(ctx, e.opTimeout())
	defer cancel()
	if _, err := e.cli.KeepAliveOnce(ctx, h.lease); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return Lease{}, Refuse(ErrNotHeld, history.ReasonNotHeld, "the lease is gone: %v", err)
		}
		return Lease{}, fmt.Errorf("etcd extend: %w", err)
	}
	return l, nil
}

// Close ends every keepalive and the connection.
func (e *EtcdLockService) Close() error {
	e.lmu.Lock()
	for _, h := range e.leases {
		h.stop()
	}
	e.leases = map[string]*lockServiceHold{}
	e.lmu.Unlock()
	return e.Etcd.Close()
}
