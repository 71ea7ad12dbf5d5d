package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/locksim/locksim/history"
)

// unlockScript deletes the key only while it still holds this lease's
// token, so a client whose lease expired cannot delete the next holder's
// lock.
var unlockScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`)

// extendScript renews the key only while it still holds this lease's token.
var extendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)

// extendResetScript is redlock-rb 0.1.6's LOCK_SCRIPT, which its
// lock(resource, ttl, extend: lock_info) ran to extend a lock
// (leandromoreira/redlock-rb#36): it sets the key to the lease's token
// when the key holds that token or does not exist at all, so an extend
// after the lease ran out, with nobody holding the key, takes it anew
// and succeeds. A mutant's renewal (redis-extend-reset).
var extendResetScript = redis.NewScript(`
if redis.call("exists", KEYS[1]) == 0 or redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
end
return false`)

// redisNode is one Redis server as this client reaches it.
type redisNode struct {
	name   string
	client *redis.Client
}

// Redlock is the published Redlock algorithm over N independent Redis
// nodes (N=1 gives the single-node SET NX PX lock): a random token,
// SET key token NX PX ttl on every node with a short per-node timeout,
// success on a majority within the validity time, validity = ttl -
// elapsed - drift with drift = ttl*0.01 + 2ms, and a token-checked delete
// on every node on failure or release.
type Redlock struct {
	nodes   []redisNode
	timeout time.Duration
	// plainDel releases with DEL instead of the token-checked script: the
	// unsafe release of redis-unsafe-release.
	plainDel bool
	// wall, when set, is the clock validity is measured by (as clients
	// that use the wall clock do, e.g. Date.now()); nil measures it on
	// CLOCK_MONOTONIC, as the algorithm should.
	wall func() time.Time
	// noValidity skips the validity check: a majority is held even when
	// the acquire ate the whole TTL, with the lease still counted from
	// before the requests (so it may be spent already). The mutant
	// redlock-no-validity breaks Redlock so; the single-instance pattern
	// (lock redis) never had the check.
	noValidity bool
	// fromReplies starts the lease's clock when the replies arrive, not
	// before the requests (a mutant): the validity check then measures
	// nothing of the acquire, and a late grant looks fresh.
	fromReplies bool
	// extendReset extends with extendResetScript (a mutant): a lapsed
	// lease whose key nobody holds is extended as though it had never
	// lapsed.
	extendReset bool
}

// RedisBackend is Redis: a scenario's Redis nodes (A, B, C...), in
// Config.Servers[RedisBackend].
const RedisBackend Backend = "redis"

func init() {
	Register(Spec{Name: "redlock", Backend: RedisBackend, PlainExpire: true, Nodes: 5, Waits: true, Doc: "Redlock over the scenario's Redis nodes (majority of N); an acquire that waits retries every 200ms ± 100ms",
		Promises: redlockPromises,
		New:      func(cfg Config) (Lock, error) { return NewRedlock(cfg, false) }})
	Register(Spec{Name: "redis", Backend: RedisBackend, PlainExpire: true, Waits: true, Doc: "single Redis, the Redis page's single-instance pattern: SET NX PX with a random token, token-checked Lua release; no validity check at acquire (that is Redlock's step 3)",
		Promises: redisPromises,
		New:      func(cfg Config) (Lock, error) { return NewSingleRedis(cfg, false) }})
	Register(Spec{Name: "redis-plain-del", Backend: RedisBackend, PlainExpire: true, Mutant: "the token-checked release", MutantOf: "redis",
		Doc: "single Redis, released with a plain DEL (deletes whoever holds it)",
		New: func(cfg Config) (Lock, error) { return NewSingleRedis(cfg, true) }})
	Register(Spec{Name: "redis-extend-reset", Backend: RedisBackend, PlainExpire: true, Mutant: "an extend that renews only a key that still holds the lease's token", MutantOf: "redis",
		Doc: "single Redis, extended as redlock-rb 0.1.6 did: SET key token PX ttl if the key is this token or absent, so an extend after the lease ran out succeeds",
		New: func(cfg Config) (Lock, error) {
			r, err := NewSingleRedis(cfg, false)
			if err == nil {
				r.extendReset = true
			}
			return r, err
		}})
	Register(Spec{Name: "redlock-wallclock", Backend: RedisBackend, PlainExpire: true, Nodes: 5, Mutant: "monotonic lease timing", MutantOf: "redlock",
		Doc: "Redlock measuring its validity by the client's wall clock, as Date.now()-based clients do",
		New: func(cfg Config) (Lock, error) {
			r, err := NewRedlock(cfg, false)
			if err == nil {
				r.wall = cfg.WallClock
				if r.wall == nil {
					r.wall = time.Now
				}
			}
			return r, err
		}})
	Register(Spec{Name: "redlock-no-validity", Backend: RedisBackend, PlainExpire: true, Nodes: 5, Mutant: "the validity check", MutantOf: "redlock",
		Doc: "Redlock that skips the validity check: a majority granted is held, however long the acquire took",
		New: func(cfg Config) (Lock, error) {
			r, err := NewRedlock(cfg, false)
			if err == nil {
				r.noValidity = true
			}
			return r, err
		}})
	Register(Spec{Name: "redlock-lease-from-replies", Backend: RedisBackend, PlainExpire: true, Nodes: 5, Mutant: "counting the lease from before the requests", MutantOf: "redlock",
		Doc: "Redlock that starts its lease's clock when the replies arrive: its validity check passes however long the acquire took, and a late grant looks fresh",
		New: func(cfg Config) (Lock, error) {
			r, err := NewRedlock(cfg, false)
			if err == nil {
				r.fromReplies = true
			}
			return r, err
		}})
}

// NewRedlock connects to every Redis node in cfg. Connections are lazy: an
// unreachable node fails its requests, not the constructor.
func NewRedlock(cfg Config, plainDel bool) (*Redlock, error) {
	if len(cfg.Servers[RedisBackend]) == 0 {
		return nil, errors.New("redlock: no Redis nodes configured")
	}
	r := &Redlock{timeout: cfg.Timeout(), plainDel: plainDel}
	for _, n := range cfg.Servers[RedisBackend] {
		r.nodes = append(r.nodes, redisNode{name: n.Name, client: NewRedisClient(n.Addr, r.timeout)})
	}
	return r, nil
}

// NewSingleRedis is the Redis page's single-instance lock on the one
// node in cfg (lock redis): Redlock's SET NX PX with a random token and
// its token-checked release, without Redlock's step 3. The page's
// single-instance pattern grants the lock when SET NX succeeds, however
// long the request took; the lease is still counted from before the
// request, so a late grant's lease may be spent already, as it is for a
// library that follows the pattern.
func NewSingleRedis(cfg Config, plainDel bool) (*Redlock, error) {
	if n := len(cfg.Servers[RedisBackend]); n != 1 {
		return nil, fmt.Errorf("redis: the single-instance lock takes one Redis node, got %d", n)
	}
	r, err := NewRedlock(cfg, plainDel)
	if err == nil {
		r.noValidity = true
	}
	return r, err
}

// NewRedisClient makes a go-redis client with every timeout set to
// timeout and no retries: a lock must not silently retry a SET NX.
func NewRedisClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		Dialer:                dialReadsArrived,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		MaxRetries:            -1,
		PoolSize:              2,
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		// No maintenance-notification handshake: plain RESP2 only.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// Quorum is the number of nodes that must grant the lock.
func (r *Redlock) Quorum() int { return len(r.nodes)/2 + 1 }

// Drift is the clock drift allowance for a ttl.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// NewToken returns a random lease token.
func NewToken() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// onEveryNode runs f on all nodes at once, each bounded by the per-node
// timeout, and returns the names of the nodes where f returned true (in
// node order) and the errors of the nodes that failed to answer (in node
// order, each naming its node). A node that answered false is in
// neither: it answered, and said no.
func (r *Redlock) onEveryNode(ctx context.Context, f func(ctx context.Context, c *redis.Client) (bool, error)) (yes []string, errs []error) {
	type answer struct {
		yes bool
		err error
	}
	answers := make([]answer, len(r.nodes))
	ask := func(i int) {
		nctx, cancel := context.WithTimeout(ctx, r.timeout)
		defer cancel()
		ok, err := f(nctx, r.nodes[i].client)
		answers[i] = answer{yes: ok, err: err}
	}
	// Every node is asked at once; the last on this goroutine, which
	// spares a single node a goroutine and a wake-up per request.
	var wait sync.WaitGroup
	last := len(r.nodes) - 1
	for i := range last {
		wait.Go(func() { ask(i) })
	}
	if last >= 0 {
		ask(last)
	}
	wait.Wait()
	for i, a := range answers {
		switch {
		case a.err != nil:
			errs = append(errs, fmt.Errorf("node %s: %w", r.nodes[i].name, a.err))
		case a.yes:
			yes = append(yes, r.nodes[i].name)
		}
	}
	return yes, errs
}

// Acquire implements Lock.
func (r *Redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("redlock: ttl must be positive, got %v", ttl)
	}
	token := NewToken()
	start := Monotonic()
	var wallStart time.Time
	if r.wall != nil {
		wallStart = r.wall()
	}
	granted, failed := r.onEveryNode(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		return c.SetNX(ctx, key, token, ttl).Result()
	})
	errs := len(failed)
	if r.fromReplies {
		start = Monotonic()
	}
	elapsed := time.Duration(Monotonic() - start)
	if r.wall != nil {
		elapsed = r.wall().Sub(wallStart)
	}
	drift := Drift(ttl)
	if len(granted) >= r.Quorum() && (ttl-elapsed-drift > 0 || r.noValidity) {
		l := Lease{Key: key, Token: token, Start: start, Validity: ttl - drift, Nodes: granted}
		if r.wall != nil {
			l.Deadline = wallStart.Add(ttl - drift)
		}
		return l, nil
	}
	// Failed: undo on every node, including those that did not answer.
	r.unlock(ctx, key, token)
	if len(granted) >= r.Quorum() {
		return Lease{Nodes: granted}, Refuse(ErrNotAcquired, history.ReasonValidity,
			"%d of %d nodes granted %v, but the acquire took %v of the %v TTL: no validity left", len(granted), len(r.nodes), granted, elapsed.Round(time.Millisecond), ttl)
	}
	reason, why := history.ReasonQuorum, fmt.Sprintf("%d did not answer", errs)
	switch {
	case errs == 0:
		reason, why = history.ReasonHeld, "the others hold the key"
	case errs == len(r.nodes):
		reason = history.ReasonTimeout
	}
	return Lease{Nodes: granted}, Refuse(ErrNotAcquired, reason, "%d of %d nodes granted %v; %s", len(granted), len(r.nodes), granted, why)
}

// Retry delays of an acquire that waits: node-redlock's defaults
// (retryDelay 200 ms, retryJitter 100 ms), which its fork keeps.
const (
	RetryDelay  = 200 * time.Millisecond
	RetryJitter = 100 * time.Millisecond
)

// AcquireWait implements Waiter: attempts, RetryDelay ± RetryJitter
// apart, until one is granted or wait has passed since the first. The
// lease's validity counts from the start of the attempt that won it, as
// Redlock's has it (node-redlock 5.0.0-beta.2 counted it from the first
// attempt's: node-redlock#296).
func (r *Redlock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	first := Monotonic()
	for attempt := 1; ; attempt++ {
		l, err := r.Acquire(ctx, key, ttl)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		delay := RetryDelay + time.Duration(mrand.Int64N(int64(2*RetryJitter)+1)) - RetryJitter
		if time.Duration(Monotonic()-first)+delay > wait {
			return l, fmt.Errorf("after %d attempts in %v: %w", attempt, wait, err)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return l, ctx.Err()
		}
	}
}

// unlock deletes key on every node that still holds token (every node
// holding key, with plainDel) and returns the nodes that deleted it and
// the errors of those that did not answer.
func (r *Redlock) unlock(ctx context.Context, key, token string) ([]string, []error) {
	return r.onEveryNode(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		if r.plainDel {
			n, err := c.Del(ctx, key).Result()
			return n == 1, err
		}
		n, err := unlockScript.Run(ctx, c, []string{key}, token).Int()
		return n == 1, err
	})
}

// noAnswer is the error of a release or extend that no node answered:
// its outcome is unknown (a node that did not answer may still hold the
// token, or may have acted on the request and lost the reply), so it is
// no refusal.
func (r *Redlock) noAnswer(op string, errs []error) error {
	return fmt.Errorf("redlock %s: none of the %d nodes answered, the outcome is unknown: %w", op, len(r.nodes), errors.Join(errs...))
}

// Release implements Lock. A node that did not answer counts as unknown,
// never as one that does not hold the token: the release is
//
//   - ok when any node deleted the key (held the token);
//   - refused, not-held, when some node answered and none held the token;
//   - an unknown outcome (a plain error) when no node answered.
func (r *Redlock) Release(ctx context.Context, l Lease) error {
	freed, errs := r.unlock(ctx, l.Key, l.Token)
	switch {
	case len(freed) > 0:
		return nil
	case len(errs) == len(r.nodes):
		return r.noAnswer("release", errs)
	case len(errs) > 0:
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "no node that answered held this lease's token (%d of %d did not answer: %v)",
			len(errs), len(r.nodes), errors.Join(errs...))
	}
	return Refuse(ErrNotHeld, history.ReasonNotHeld, "no node held this lease's token")
}

// Extend implements Lock: renews on every node that still holds the
// token; the lease is valid again only if a majority renewed in time
// (refused, not-held, otherwise). When no node answered at all, the
// outcome is unknown (a plain error): the silent nodes may have renewed.
func (r *Redlock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	start := Monotonic()
	renewed, errs := r.onEveryNode(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		if r.extendReset {
			err := extendResetScript.Run(ctx, c, []string{l.Key}, l.Token, ttl.Milliseconds()).Err()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			return err == nil, err
		}
		n, err := extendScript.Run(ctx, c, []string{l.Key}, l.Token, ttl.Milliseconds()).Int()
		return n == 1, err
	})
	elapsed := time.Duration(Monotonic() - start)
	if len(errs) == len(r.nodes) {
		return l, r.noAnswer("extend", errs)
	}
	if len(renewed) < r.Quorum() || ttl-elapsed-Drift(ttl) <= 0 {
		if len(errs) > 0 {
			return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "renewed on %v (%d of %d did not answer: %v)", renewed, len(errs), len(r.nodes), errors.Join(errs...))
		}
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "renewed on %v", renewed)
	}
	l.Start, l.Validity, l.Nodes = start, ttl-Drift(ttl), renewed
	if r.wall != nil {
		// Measured from the end of the renewal: a slight under-estimate.
		l.Deadline = r.wall().Add(ttl - Drift(ttl) - elapsed)
	}
	return l, nil
}

// PlainExpire renews key with a plain PEXPIRE on every node, without
// checking whose key it is (the naive watchdog). It returns the nodes
// where the key existed, whoever it belonged to, and ErrNotHeld when
// fewer than a majority had it.
func (r *Redlock) PlainExpire(ctx context.Context, key string, ttl time.Duration) ([]string, error) {
	nodes, _ := r.onEveryNode(ctx, func(ctx context.Context, c *redis.Client) (bool, error) {
		return c.PExpire(ctx, key, ttl).Result()
	})
	if len(nodes) < r.Quorum() {
		return nodes, Refuse(ErrNotHeld, history.ReasonNotHeld, "the key exists on %v only", nodes)
	}
	return nodes, nil
}

// Warm opens a connection to every node (PING), so that the first acquire
// of a story does not pay for dialling inside its per-node timeout.
func (r *Redlock) Warm(ctx context.Context) error {
	var errs []error
	for _, n := range r.nodes {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := n.client.Ping(c).Err(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.name, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// Close implements Lock.
func (r *Redlock) Close() error {
	for _, n := range r.nodes {
		_ = n.client.Close()
	}
	return nil
}
