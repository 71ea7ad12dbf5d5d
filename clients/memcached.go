package clients

// memcached: locksim's own lock on one memcached server, the reference a
// memcached lock library (tooz's) is judged against. It speaks memcached's
// meta protocol (memcached 1.6's ms, mg and md commands), which compares
// an item's CAS value on a set and on a delete: a release or an extend
// touches the key only while it still holds this lease's token.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/history"
)

// MemcachedBackend is one memcached server, the story's node A.
const MemcachedBackend Backend = "memcached"

// memcachedTick is the grain of memcached's clock: it counts expiry in
// whole seconds of a clock it advances once a second, so a key set for n
// seconds lives between n-1 and n of them.
const memcachedTick = time.Second

func init() {
	Register(Spec{Name: "memcached", Backend: MemcachedBackend, MinTTL: 2 * memcachedTick,
		Promises: memcachedPromises,
		Doc:      "memcached: add with an expiry, release and extend compare the token's CAS (meta protocol); the lease counts one second less than the TTL",
		New:      func(cfg Config) (Lock, error) { return NewMemcached(cfg) }})
}

// Memcached is the reference memcached lock, on its config's first
// memcached node:
//   - Acquire adds the key with the token as its value and the TTL,
//     rounded up to whole seconds, as its expiry ("ms KEY N ME T<s>"): add
//     mode stores only a key that is not there.
//   - Release reads the key's value and CAS ("mg KEY v c") and, if it is
//     the token, deletes it on that CAS ("md KEY C<cas>"): a key retaken
//     in between has another CAS and stays.
//   - Extend reads likewise and sets the token again with the new expiry
//     on that CAS ("ms KEY N T<s> C<cas>").
//
// The lease's Validity is the expiry less one second of memcached's
// clock (memcachedTick), counted from Start, a CLOCK_MONOTONIC reading
// taken before the request was sent.
//
// One connection, dialled at the first call and again after a call that
// failed (its stream may hold a late answer). Every call is bounded by
// cfg.Timeout(); a call that gets no answer is an unknown outcome, and
// an answer that arrived is read even when the deadline passed while the
// client was stopped (arrivedConn).
type Memcached struct {
	node    Node
	timeout time.Duration

	mu   sync.Mutex
	conn net.Conn
	rd   *bufio.Reader
}

// NewMemcached builds the lock on cfg's first memcached node.
func NewMemcached(cfg Config) (*Memcached, error) {
	nodes := cfg.Servers[MemcachedBackend]
	if len(nodes) == 0 {
		return nil, errors.New("memcached: no memcached node configured")
	}
	return &Memcached{node: nodes[0], timeout: cfg.Timeout()}, nil
}

// MemcachedExpiry is the expiry, in whole seconds, a memcached lock sets
// for ttl: ttl rounded up.
func MemcachedExpiry(ttl time.Duration) int64 {
	return int64((ttl + memcachedTick - 1) / memcachedTick)
}

// Acquire implements Lock: one add.
func (m *Memcached) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if ttl < 2*memcachedTick {
		return Lease{}, fmt.Errorf("memcached: ttl must be at least %v (memcached counts expiry in whole seconds, one of which may be gone at the add), got %v", 2*memcachedTick, ttl)
	}
	token := NewToken()
	exp := MemcachedExpiry(ttl)
	start := Monotonic()
	answer, err := m.call(ctx, fmt.Sprintf("ms %s %d ME T%d\r\n%s", key, len(token), exp, token))
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("memcached acquire: %w", err)
	case answer == "NS":
		return Lease{}, Refuse(ErrNotAcquired, history.ReasonHeld, "node %s holds the key for another client", m.node.Name)
	case answer != "HD":
		return Lease{}, fmt.Errorf("memcached acquire: node %s answered %q", m.node.Name, answer)
	}
	return Lease{Key: key, Token: token, Start: start, Validity: time.Duration(exp)*memcachedTick - memcachedTick,
		Nodes: []string{m.node.Name}}, nil
}

// Release implements Lock: a delete on the CAS of the key that holds the
// token.
func (m *Memcached) Release(ctx context.Context, l Lease) error {
	cas, err := m.held(ctx, l, "release")
	if err != nil {
		return err
	}
	answer, err := m.call(ctx, fmt.Sprintf("md %s C%d", l.Key, cas))
	return m.compared(answer, err, "release", l)
}

// Extend implements Lock: the token set again, with the new expiry, on
// the CAS of the key that holds it.
func (m *Memcached) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl < 2*memcachedTick {
		return l, fmt.Errorf("memcached: ttl must be at least %v, got %v", 2*memcachedTick, ttl)
	}
	cas, err := m.held(ctx, l, "extend")
	if err != nil {
		return l, err
	}
	exp := MemcachedExpiry(ttl)
	start := Monotonic()
	answer, err := m.call(ctx, fmt.Sprintf("ms %s %d T%d C%d\r\n%s", l.Key, len(l.Token), exp, cas, l.Token))
	if err := m.compared(answer, err, "extend", l); err != nil {
		return l, err
	}
	l.Start, l.Validity = start, time.Duration(exp)*memcachedTick-memcachedTick
	return l, nil
}

// held reads the key's value and CAS: the CAS when the value is l's
// token, else a refusal (not-held).
func (m *Memcached) held(ctx context.Context, l Lease, verb string) (uint64, error) {
	answer, value, err := m.get(ctx, l.Key)
	switch {
	case err != nil:
		return 0, fmt.Errorf("memcached %s: %w", verb, err)
	case answer == "EN":
		return 0, Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s has no key %s (expired or never set)", m.node.Name, l.Key)
	case !strings.HasPrefix(answer, "VA "):
		return 0, fmt.Errorf("memcached %s: node %s answered %q", verb, m.node.Name, answer)
	case value != l.Token:
		return 0, Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s's key %s holds another lease's token", m.node.Name, l.Key)
	}
	for _, f := range strings.Fields(answer)[2:] {
		if strings.HasPrefix(f, "c") {
			return strconv.ParseUint(f[1:], 10, 64)
		}
	}
	return 0, fmt.Errorf("memcached %s: node %s answered %q, with no CAS", verb, m.node.Name, answer)
}

// compared reads the answer to a command sent on a CAS: HD done; EX (the
// CAS differs) or NF (the key is gone) not held.
func (m *Memcached) compared(answer string, err error, verb string, l Lease) error {
	switch {
	case err != nil:
		return fmt.Errorf("memcached %s: %w", verb, err)
	case answer == "HD":
		return nil
	case answer == "EX" || answer == "NF" || answer == "NS":
		return Refuse(ErrNotHeld, history.ReasonNotHeld, "node %s's key %s changed or went after it was read (%s)", m.node.Name, l.Key, answer)
	}
	return fmt.Errorf("memcached %s: node %s answered %q", verb, m.node.Name, answer)
}

// get sends "mg KEY v c": the answer's line ("VA n c<cas>", or "EN") and
// the value.
func (m *Memcached) get(ctx context.Context, key string) (answer, value string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	answer, err = m.send(ctx, "mg "+key+" v c")
	if err != nil || !strings.HasPrefix(answer, "VA ") {
		return answer, "", err
	}
	n, err := strconv.Atoi(strings.Fields(answer)[1])
	if err != nil {
		m.drop()
		return answer, "", fmt.Errorf("answer %q: %w", answer, err)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(m.rd, buf); err != nil {
		m.drop()
		return answer, "", err
	}
	return answer, string(buf[:n]), nil
}

// call sends one command and returns its one-line answer.
func (m *Memcached) call(ctx context.Context, cmd string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.send(ctx, cmd)
}

// send writes cmd and reads one line, on the connection (dialled if
// none), within the node timeout; a failure drops the connection. m.mu
// is held.
func (m *Memcached) send(ctx context.Context, cmd string) (string, error) {
	deadline := time.Now().Add(m.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if m.conn == nil {
		var d net.Dialer
		dctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := d.DialContext(dctx, "tcp", m.node.Addr)
		cancel()
		if err != nil {
			return "", err
		}
		// A reply that arrived while the client was stopped past its
		// deadline is read, not taken for no answer (arrived.go).
		c = arrivedConn{c}
		m.conn, m.rd = c, bufio.NewReader(c)
	}
	_ = m.conn.SetDeadline(deadline)
	line, err := func() (string, error) {
		if _, err := m.conn.Write([]byte(cmd + "\r\n")); err != nil {
			return "", err
		}
		return m.rd.ReadString('\n')
	}()
	if err != nil {
		m.drop()
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// drop closes the connection; the next call dials again. m.mu is held.
func (m *Memcached) drop() {
	if m.conn != nil {
		m.conn.Close()
		m.conn, m.rd = nil, nil
	}
}

// Close implements Lock.
func (m *Memcached) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop()
	return nil
}
