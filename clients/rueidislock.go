package clients

// rueidislock: github.com/redis/rueidis/rueidislock, the lock of the
// rueidis Redis client: a majority of several keys on one Redis (or one
// cluster), each renewed in the background by the library's own
// watchdog, and a context the library cancels when it finds the lock
// lost.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locksim/locksim/history"
)

func init() {
	Register(Spec{Name: "rueidislock", Like: "redis", Backend: RedisBackend, NoExpiry: true, LocalExtend: true,
		Promises:    rueidislockPromises,
		OwnWatchdog: "its ExtendInterval renews the keys every KeyValidity/2 (library defaults: 5 s, every 2.5 s)",
		Doc:         "redis/rueidis rueidislock v1.0.79 on one Redis node (TryWithContext, library defaults: 2 of 3 keys, its own watchdog renewing them)",
		New:         func(cfg Config) (Lock, error) { return NewRueidislock(cfg) }})
}

// rueidislockPrefix is the library's default KeyPrefix: a lock named
// key is the keys rueidislock:0:key, rueidislock:1:key and
// rueidislock:2:key.
const rueidislockPrefix = "rueidislock"

// rueidislockKeys is how many keys a lock is with the library's default
// KeyMajority of 2: 2*2-1.
const rueidislockKeys = 3

// Rueidislock is a thin adapter over rueidislock's Locker (v1.0.79, read
// in its source, rueidislock/lock.go), on the first Redis node of its
// config. What the library does:
//
//   - A lock named key is KeyMajority*2-1 keys (default 3), all on the
//     one rueidis client, so on one Redis server (or spread over a
//     cluster's slots): not a Redlock over independent servers. The lock
//     is held when KeyMajority (2) of them are set, each by SET NX PXAT
//     now+KeyValidity (the client's wall clock) with a random 24-byte
//     value shared by the keys. A key found held ends the try at once.
//   - A granted lock comes with a context and a cancel func. For each
//     key a goroutine renews it (PEXPIREAT now+KeyValidity, value-checked)
//     every ExtendInterval (KeyValidity/2), and at once when Redis's
//     client-side-caching invalidation says the key changed. When a
//     renewal fails (the key is no longer this value, or any error) or
//     the context ends, it deletes the key (value-checked, unless it
//     found it gone) and stops; when a majority has stopped, the library
//     cancels the context. Nothing cancels it when KeyValidity passes
//     without a renewal: the holder learns of the loss from a round trip
//     its watchdog makes, never from its own clock.
//   - The cancel func is the release: it cancels the context and waits
//     for every key's goroutine to delete its key. It reports nothing:
//     the deletions' answers are dropped.
//
// The adapter keeps the library's defaults but for these, each because
// of the harness's contract:
//
//   - Acquire calls TryWithContext (one try, no waiting), not WithContext
//     (which waits for the lock).
//   - KeyValidity is per Locker, not per call: the adapter keeps one
//     Locker (and its rueidis client, one connection) per TTL asked for,
//     built on the first acquire of that TTL, so that a client built
//     while the server is unreachable is built (its acquire then fails).
//   - The context given to TryWithContext is context.Background(), not
//     the call's: the lock's context derives from it, and the call's
//     context ends when Acquire returns, which would release the lock.
//   - TryNextAfter (each key's SET, default 20ms) is cfg.Timeout(), the
//     harness's per-request bound, and the rueidis client dials within
//     cfg.Timeout() (default 5s). TryWithContext, and the release, can
//     still wait for the library's value-checked deletes, which run
//     under context.Background() with rueidis's retries (up to 20, up to
//     1s apart): Acquire waits at most 4 x cfg.Timeout() and Release
//     cfg.Timeout(), then say the outcome is unknown (a lock granted
//     after Acquire gave up is released as soon as it comes).
//
// What the lease and the Spec say: the library tells its user to hold
// the lock until the context ends, with no time bound, as etcd's session
// does; so the Spec says NoExpiry and the lease's Validity is 0 (until
// released, or until the library gives the lock up), though each key
// does expire on the server KeyValidity after its last renewal: a
// holder paused past that loses the lock without knowing it.
// Token is the library's random value in hex (it is binary); Fence 0;
// Nodes the one node.
//
// Extend sends nothing (Spec.LocalExtend): the library renews the keys
// itself, and offers no extend; Extend says whether the lock's context
// is still live (the lease, unchanged, whatever the ttl) or the library
// has given the lock up (refused, not-held).
//
// What each key answered is recorded by a wrapper of the rueidis client
// (rueidisRecorder, through LockerOption.ClientBuilder): it passes every
// command on and records, per lease value and key, the reply to the
// library's scripts (1 or OK: yes; 0 or nil: no; an error: none). After
// the cancel func returns, each key's last answer is its delete's, or
// the renewal that found it gone. Release reads them as redsync's
// adapter reads its nodes: released when the keys deleted, or no longer
// this value, leave no majority that can still hold it and one was
// deleted; refused, not-held, when none was; unknown when the keys that
// did not answer could still make a majority.
//
// A lease this client did not obtain (another client's, or a forged one)
// is refused not-held without sending anything, as Redislock does.
type Rueidislock struct {
	node    Node
	timeout time.Duration
	rec     *rueidisRecorder

	mu      sync.Mutex
	lockers map[time.Duration]rueidislock.Locker // KeyValidity -> Locker
	held    map[string]*rueidisHold              // lease token -> hold
}

// rueidisHold is one granted lock: its context and the library's cancel.
type rueidisHold struct {
	key    string
	val    string // the library's value (binary)
	ctx    context.Context
	cancel context.CancelFunc
}

// NewRueidislock builds the adapter on cfg's first Redis node; it
// connects on the first acquire.
func NewRueidislock(cfg Config) (*Rueidislock, error) {
	if len(cfg.Servers[RedisBackend]) == 0 {
		return nil, errors.New("rueidislock: no Redis node configured")
	}
	return &Rueidislock{node: cfg.Servers[RedisBackend][0], timeout: cfg.Timeout(), rec: newRueidisRecorder(),
		lockers: map[time.Duration]rueidislock.Locker{}, held: map[string]*rueidisHold{}}, nil
}

// locker returns the Locker of KeyValidity ttl, building it on first use.
func (r *Rueidislock) locker(ttl time.Duration) (rueidislock.Locker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lk, ok := r.lockers[ttl]; ok {
		return lk, nil
	}
	opt := rueidis.ClientOption{InitAddress: []string{r.node.Addr}}
	opt.Dialer.Timeout = r.timeout
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: opt,
		KeyValidity:  ttl,
		TryNextAfter: r.timeout,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return recordingClient{Client: c, rec: r.rec}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connect to node %s: %w", r.node.Name, err)
	}
	r.lockers[ttl] = lk
	return lk, nil
}

// grant is what TryWithContext returned.
type rueidisGrant struct {
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

// Acquire implements Lock: one TryWithContext on the Locker of ttl.
func (r *Rueidislock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if ttl < time.Millisecond {
		return Lease{}, fmt.Errorf("rueidislock: ttl must be at least 1ms, got %v", ttl)
	}
	start := Monotonic()
	lk, err := r.locker(ttl)
	if err != nil {
		return Lease{}, err
	}
	try := &rueidisTry{}
	done := make(chan rueidisGrant, 1)
	go func() {
		lctx, cancel, err := lk.TryWithContext(context.WithValue(context.Background(), rueidisTryKey{}, try), key)
		done <- rueidisGrant{lctx, cancel, err}
	}()
	wait := time.NewTimer(4 * r.timeout)
	defer wait.Stop()
	var g rueidisGrant
	select {
	case g = <-done:
	case <-wait.C:
		go func() { // give back a lock granted too late for this call
			if g := <-done; g.err == nil {
				g.cancel()
			}
		}()
		return Lease{}, fmt.Errorf("rueidislock acquire: no outcome within %v", 4*r.timeout)
	case <-ctx.Done():
		go func() {
			if g := <-done; g.err == nil {
				g.cancel()
			}
		}()
		return Lease{}, fmt.Errorf("rueidislock acquire: %w", ctx.Err())
	}
	val := try.value()
	if g.err != nil {
		r.rec.forget(val)
	}
	switch {
	case errors.Is(g.err, rueidislock.ErrNotLocked):
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "node %s holds a key of the lock for another client: %v", r.node.Name, g.err)
	case g.err != nil:
		return Lease{}, fmt.Errorf("rueidislock acquire: %w", g.err)
	}
	h := &rueidisHold{key: key, val: val, ctx: g.ctx, cancel: g.cancel}
	l := Lease{Key: key, Token: hex.EncodeToString([]byte(val)), Start: start, Nodes: []string{r.node.Name}}
	r.mu.Lock()
	r.held[l.Token] = h
	r.mu.Unlock()
	return l, nil
}

// hold finds the library's lock for l.
func (r *Rueidislock) hold(l Lease) (*rueidisHold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.held[l.Token]
	if !ok || h.key != l.Key {
		return nil, Refuse(ErrNotHeld, history.ReasonNotHeld, "this client holds no lease %q on %s (nothing sent)", l.Token, l.Key)
	}
	return h, nil
}

// Release implements Lock: the library's cancel func, judged by what
// each key last answered.
func (r *Rueidislock) Release(ctx context.Context, l Lease) error {
	h, err := r.hold(l)
	if err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.held, l.Token)
	r.mu.Unlock()
	released := make(chan struct{})
	go func() { h.cancel(); close(released) }()
	wait := time.NewTimer(r.timeout)
	defer wait.Stop()
	select {
	case <-released:
	case <-wait.C:
		return fmt.Errorf("rueidislock release: the library's deletes did not finish within %v", r.timeout)
	case <-ctx.Done():
		return fmt.Errorf("rueidislock release: %w", ctx.Err())
	}
	ans := r.rec.forget(h.val)
	for len(ans) < rueidislockKeys {
		ans = append(ans, answerNone)
	}
	n := len(ans)
	quorum := n/2 + 1
	var deleted, notOurs, silent int
	for _, a := range ans {
		switch a {
		case answerYes:
			deleted++
		case answerNo:
			notOurs++
		default:
			silent++
		}
	}
	switch {
	case deleted+notOurs <= n-quorum:
		return fmt.Errorf("rueidislock release: %d of %d keys deleted, %d no longer this lease's, %d did not answer", deleted, n, notOurs, silent)
	case deleted > 0:
		return nil
	}
	return Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s: %d of %d keys no longer hold this lease's value (%d did not answer)", r.node.Name, notOurs, n, silent)
}

// Extend implements Lock without sending anything: the library renews
// the keys itself; the lease holds while the lock's context is live.
func (r *Rueidislock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	h, err := r.hold(l)
	if err != nil {
		return l, err
	}
	if err := h.ctx.Err(); err != nil {
		return l, Refuse(ErrNotHeld, history.ReasonNotHeld, "the library has given the lock up (its context: %v)", context.Cause(h.ctx))
	}
	return l, nil
}

// Close implements Lock: closes every Locker (which gives up the locks
// still held).
func (r *Rueidislock) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, lk := range r.lockers {
		lk.Close()
	}
	r.lockers = map[time.Duration]rueidislock.Locker{}
	return nil
}

// rueidisTryKey marks the context of one TryWithContext, whose value the
// recorder hands to rueidisTry.
type rueidisTryKey struct{}

// rueidisTry learns the value of the lock one TryWithContext sets.
type rueidisTry struct {
	mu  sync.Mutex
	val string
}

func (t *rueidisTry) value() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.val
}

// rueidisRecorder records, per lease value, each key's last answer to
// the library's scripts (acquire, renew, delete: each EVALSHA or EVAL
// KEYS[1]=prefix:i:name ARGV[1]=value).
type rueidisRecorder struct {
	mu   sync.Mutex
	keys map[string][]answer // value -> answer per key index
}

func newRueidisRecorder() *rueidisRecorder {
	return &rueidisRecorder{keys: map[string][]answer{}}
}

// forget returns and drops the answers recorded for val.
func (rec *rueidisRecorder) forget(val string) []answer {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	a := rec.keys[val]
	delete(rec.keys, val)
	return a
}

// recordingClient passes every command to the rueidis client and records
// the replies to the lock's scripts.
type recordingClient struct {
	rueidis.Client
	rec *rueidisRecorder
}

// Do implements rueidis.Client.
func (c recordingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands() // read before Do: a sent command is recycled
	idx, val, ok := scriptCall(args)
	if !ok {
		return c.Client.Do(ctx, cmd)
	}
	if try, _ := ctx.Value(rueidisTryKey{}).(*rueidisTry); try != nil {
		try.mu.Lock()
		try.val = val
		try.mu.Unlock()
	}
	resp := c.Client.Do(ctx, cmd)
	a := answerNone
	switch msg, err := resp.ToMessage(); {
	case rueidis.IsRedisNil(err):
		a = answerNo
	case err != nil:
		if re, isRedis := rueidis.IsRedisErr(err); isRedis && re.IsNoScript() {
			return resp // EVAL follows
		}
	default:
		if v, err := msg.AsInt64(); err == nil {
			a = map[bool]answer{true: answerYes, false: answerNo}[v == 1]
		} else if s, err := msg.ToString(); err == nil && s == "OK" {
			a = answerYes
		}
	}
	c.rec.mu.Lock()
	ans := c.rec.keys[val]
	for len(ans) <= idx {
		ans = append(ans, answerNone)
	}
	ans[idx] = a
	c.rec.keys[val] = ans
	c.rec.mu.Unlock()
	return resp
}

// scriptCall reads a lock script's call, EVALSHA|EVAL script 1
// rueidislock:i:name value deadline: the key's index i and the value.
func scriptCall(args []string) (idx int, val string, ok bool) {
	if len(args) != 6 || (args[0] != "EVALSHA" && args[0] != "EVAL") || args[2] != "1" {
		return 0, "", false
	}
	rest, found := strings.CutPrefix(args[3], rueidislockPrefix+":")
	if !found {
		return 0, "", false
	}
	i, _, found := strings.Cut(rest, ":")
	if !found {
		return 0, "", false
	}
	idx, err := strconv.Atoi(i)
	if err != nil || idx < 0 {
		return 0, "", false
	}
	return idx, args[4], true
}
