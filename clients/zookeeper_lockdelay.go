package clients

// Chubby's lock-delay on ZooKeeper's lock recipe: Michael Burrows, "The
// Chubby lock service for loosely-coupled distributed systems" (OSDI
// 2006), section 2.4, "Locks and sequencers",
// https://www.usenix.org/legacy/event/osdi06/tech/full_papers/burrows/burrows.pdf.
// A lock released in the normal way is free at once; a lock freed because
// its holder failed or became inaccessible stays taken for a while, the lock-delay, so that the failed
// holder's delayed messages reach the resource before the next holder
// does. Chubby's server keeps that time itself. Here the ensemble does:
// each granted lease also holds a second session, of timeout ttl +
// LockDelay, with an ephemeral znode delay-<n> beside the lock's
// contenders. Both sessions are pinged by the same client, so when the
// holder fails (killed, paused, cut off) they stop together: the ensemble
// expires the lease's session after ttl and deletes its lock znode, and
// the delay session about LockDelay later, deleting delay-<n>; until then
// every contender is refused (held). (Each session counts from the last
// ping the ensemble heard, and a session pings every third of its
// timeout, so the delay past the lease's expiry can be shorter than
// LockDelay by up to a third of ttl + LockDelay.) Release deletes delay-<n> before the lock
// znode, so a lock given back is free at once, as in Chubby. The ensemble
// clamps a session's timeout to its maxSessionTimeout (4 s on
// env.ZooKeeper's tick), so ttl + LockDelay above it is cut to it. A
// holder that reaches the ensemble again before its delay session expired
// keeps the lock taken until its next Release or Extend (refused
// not-held), which closes that session.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultLockDelay is zookeeper-lock-delay's lock-delay: with a 1 s
// session, the 4 s the ensemble grants at most.
const DefaultLockDelay = 3 * time.Second

func init() {
	Register(Spec{Name: "zookeeper-lock-delay", Backend: ZooKeeperBackend, Fences: true, NoExpiry: true, MinTTL: ZooKeeperMinTTL,
		Promises: zookeeperLockDelayPromises,
		Doc:      "the zookeeper lock with Chubby's lock-delay: a holder whose session ends (it failed) keeps the lock taken 3s longer, on a second session the ensemble expires; a release frees it at once",
		New: func(cfg Config) (Lock, error) {
			return NewZooKeeperLock(ZooKeeperConfig{Members: cfg.Servers[ZooKeeperBackend], NodeTimeout: cfg.NodeTimeout, ClientID: cfg.ClientID,
				LockDelay: DefaultLockDelay})
		}})
}

// delayPrefix begins the name of a lease's lock-delay znode.
const delayPrefix = "delay-"

// isDelayZnode says whether a child of a lock's path is a lock-delay
// znode, not a contender.
func isDelayZnode(name string) bool { return strings.HasPrefix(name, delayPrefix) }

// holdDelay opens the lock-delay session of the lease granted on s (its
// lock znode lockPath) and creates its delay znode.
func (z *ZooKeeperLock) holdDelay(ctx context.Context, s *zkSession, key, lockPath string) error {
	d, err := z.connect(ctx, s.timeout+z.cfg.LockDelay)
	if err != nil {
		return fmt.Errorf("zookeeper acquire: the lock-delay session: %w", err)
	}
	seq, err := zkSeq(lockPath)
	if err != nil {
		z.closeSession(d)
		return err
	}
	path := ZooKeeperRoot + "/" + key + "/" + delayPrefix + strconv.FormatInt(seq, 10)
	data := []byte("lock-delay of client " + strconv.Itoa(z.cfg.ClientID))
	_, err = zkCall(ctx, func() (string, error) {
		return d.conn.Create(path, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	})
	if err != nil {
		z.closeSession(d)
		return fmt.Errorf("zookeeper acquire: the lock-delay znode: %w", err)
	}
	s.delay, s.delayPath = d, path
	return nil
}

// releaseDelay deletes s's delay znode, before its lock znode goes: a
// lock given back is free at once. Its session is closed in the
// background.
func (z *ZooKeeperLock) releaseDelay(ctx context.Context, s *zkSession) error {
	if s.delay == nil {
		return nil
	}
	defer z.dropDelay(s)
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, s.delay.conn.Delete(s.delayPath, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("the lock-delay znode: %w", err)
	}
	return nil
}

// dropDelay closes s's lock-delay session, if any: the ensemble deletes
// its znode.
func (z *ZooKeeperLock) dropDelay(s *zkSession) {
	if s.delay != nil {
		z.closeSession(s.delay)
		s.delay = nil
	}
}
