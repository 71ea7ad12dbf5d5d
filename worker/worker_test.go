package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/storage"
)

// memLock is an in-memory lock for testing the worker's protocol alone:
// the verdicts in this project come from real servers, never from it.
type memLock struct {
	mu   *sync.Mutex
	held map[string]string
}

func (m memLock) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held[key]; ok {
		return clients.Lease{}, clients.ErrNotAcquired
	}
	tok := clients.NewToken()
	m.held[key] = tok
	return clients.Lease{Key: key, Token: tok, Start: history.Monotonic(), Validity: ttl}, nil
}

func (m memLock) Release(ctx context.Context, l clients.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[l.Key] != l.Token {
		return clients.ErrNotHeld
	}
	delete(m.held, l.Key)
	return nil
}

func (m memLock) Extend(ctx context.Context, l clients.Lease, ttl time.Duration) (clients.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[l.Key] != l.Token {
		return clients.Lease{}, clients.Refuse(clients.ErrNotHeld, history.ReasonNotHeld, "key %s is not this lease's", l.Key)
	}
	return l, nil
}

func (m memLock) Close() error { return nil }

var shared = memLock{mu: &sync.Mutex{}, held: map[string]string{}}

func init() {
	clients.Register(clients.Spec{Name: "test-mem", Backend: "none", Doc: "in-memory, worker protocol tests only",
		New: func(clients.Config) (clients.Lock, error) { return shared, nil }})
}

// serve runs the worker on the given commands and returns its replies.
func serve(t *testing.T, cmds ...protocol.Command) []protocol.Reply {
	t.Helper()
	var in strings.Builder
	for _, c := range cmds {
		b, _ := json.Marshal(c)
		in.Write(append(b, '\n'))
	}
	pr, pw := io.Pipe()
	go func() {
		Serve(strings.NewReader(in.String()), pw)
		pw.Close()
	}()
	var out []protocol.Reply
	dec := json.NewDecoder(pr)
	for {
		var r protocol.Reply
		if err := dec.Decode(&r); err != nil {
			break
		}
		out = append(out, r)
	}
	return out
}

func TestServeRecordsEachOperation(t *testing.T) {
	replies := serve(t,
		protocol.Command{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem"}},
		protocol.Command{ID: 2, Op: history.OpAcquire, Key: "K", TTL: time.Second},
		protocol.Command{ID: 3, Op: history.OpRelease, Key: "K"},
		protocol.Command{ID: 4, Op: history.OpRelease, Key: "K"},
		protocol.Command{ID: 5, Op: "fly"},
	)
	type seen struct {
		id  int64
		ev  string
		err string
	}
	var got []seen
	for _, r := range replies {
		s := seen{id: r.ID, err: r.Error}
		if r.Event != nil {
			s.ev = string(r.Event.Type) + " " + r.Event.Op
		} else if r.Done {
			s.ev = "done"
		}
		got = append(got, s)
	}
	want := []seen{
		{1, "done", ""},
		{2, "invoke acquire", ""}, {2, "ok acquire", ""}, {2, "done", ""},
		{3, "invoke release", ""}, {3, "ok release", ""}, {3, "done", ""},
		// A second release has no lease: a certain failure, not an error.
		{4, "invoke release", ""}, {4, "fail release", ""}, {4, "done", ""},
		{5, "done", `unknown op "fly"`},
	}
	if len(got) != len(want) {
		t.Fatalf("replies:\n%v\nwant:\n%v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reply %d = %+v, want %+v (all: %v)", i, got[i], want[i], got)
		}
	}
	// The granted acquire carries the lease's end and token.
	ok := replies[2].Event
	if ok.Token == "" || ok.LeaseEnd <= ok.Time {
		t.Fatalf("granted acquire lacks its lease: %+v", ok)
	}
}

func TestServeRefusesCommandsBeforeInit(t *testing.T) {
	replies := serve(t, protocol.Command{ID: 1, Op: history.OpAcquire, Key: "K"})
	if len(replies) != 1 || !replies[0].Done || !strings.Contains(replies[0].Error, "before init") {
		t.Fatalf("replies %+v, want one done with a 'before init' error", replies)
	}
}

func TestOutcome(t *testing.T) {
	cases := []struct {
		err  error
		want history.Type
	}{
		{nil, history.Ok},
		{clients.ErrNotAcquired, history.Fail},
		{clients.ErrNotHeld, history.Fail},
		{context.DeadlineExceeded, history.Info}, // a timeout: unknown
		{io.ErrUnexpectedEOF, history.Info},
	}
	for _, c := range cases {
		if got := outcome(c.err); got != c.want {
			t.Errorf("outcome(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// events returns the replies' events whose op is op.
func events(replies []protocol.Reply, op string) []history.Event {
	var out []history.Event
	for _, r := range replies {
		if r.Event != nil && r.Event.Op == op {
			out = append(out, *r.Event)
		}
	}
	return out
}

// TestNoLeaseNoIO: a write, extend or release without a lease is refused
// by the worker with reason no-lease, before any I/O. The storage here is
// an address nothing listens on: any attempt to reach it would end in an
// error (an unknown outcome), not in a no-lease refusal.
func TestNoLeaseNoIO(t *testing.T) {
	replies := serve(t,
		protocol.Command{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem"}},
		protocol.Command{ID: 2, Op: history.OpWrite, Key: "N"},
		protocol.Command{ID: 3, Op: history.OpExtend, Key: "N", TTL: time.Second},
		protocol.Command{ID: 4, Op: history.OpRelease, Key: "N"},
	)
	for _, op := range []string{history.OpWrite, history.OpExtend, history.OpRelease} {
		evs := events(replies, op)
		if len(evs) != 2 || evs[0].Type != history.Invoke || evs[1].Type != history.Fail || evs[1].Reason != history.ReasonNoLease {
			t.Errorf("%s without a lease: %+v, want invoke then fail (no-lease)", op, evs)
		}
	}
	// unlocked: the write goes ahead; with no storage configured it fails
	// for that reason, not for the missing lease.
	replies = serve(t,
		protocol.Command{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem"}},
		protocol.Command{ID: 2, Op: history.OpWrite, Key: "N", Unlocked: true},
	)
	evs := events(replies, history.OpWrite)
	if len(evs) != 2 || !evs[0].Unlocked || evs[1].Reason == history.ReasonNoLease {
		t.Fatalf("unlocked write: %+v, want it attempted", evs)
	}
}

// TestExtendRefusedEndsTheLease: an extend the servers refuse as not held
// ends the client's belief, as a watchdog's refused renewal does, so that
// the write after it sends nothing; an extend that succeeds keeps it.
func TestExtendRefusedEndsTheLease(t *testing.T) {
	for _, gone := range []bool{false, true} {
		var out strings.Builder
		buf := bufio.NewWriter(&out)
		l, err := shared.Acquire(context.Background(), "Z", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			shared.mu.Lock()
			delete(shared.held, "Z") // the servers gave it away
			shared.mu.Unlock()
		}
		s := &state{leases: map[string]clients.Lease{"Z": l}, lock: shared, out: json.NewEncoder(buf), buf: buf, wall: time.Now}
		s.extend(context.Background(), protocol.Command{ID: 3, Op: history.OpExtend, Key: "Z", TTL: time.Second})
		_ = buf.Flush()
		if _, held := s.lease("Z"); held == gone {
			t.Fatalf("lease gone on the servers: %v; the client still holds it: %v (%s)", gone, held, out.String())
		}
		if !gone {
			_ = shared.Release(context.Background(), l)
		}
	}
}

// TestWallClockLeaseEnd: a lease timed by the wall clock records, as its
// end, the monotonic instant its deadline corresponds to.
func TestWallClockLeaseEnd(t *testing.T) {
	s := &state{wall: func() time.Time { return time.Unix(1000, 0) }}
	now := history.Monotonic()
	l := clients.Lease{Start: now, Validity: time.Second, Deadline: time.Unix(1003, 0)}
	end := s.leaseEnd(l)
	if d := time.Duration(end - now); d < 3*time.Second-50*time.Millisecond || d > 3*time.Second+50*time.Millisecond {
		t.Fatalf("lease end %v after now, want about 3s (the wall-clock deadline), not the 1s validity", d)
	}
}

// TestEveryRefusingModeSaysWhy: a write refused by any storage mode but
// plain (which refuses nothing) carries the reason a story's claim names.
func TestEveryRefusingModeSaysWhy(t *testing.T) {
	for _, m := range storage.Modes() {
		if got := refusalReason(m); (got == "") != (m == storage.Plain) {
			t.Errorf("storage mode %s: refusal reason %q", m, got)
		}
	}
}

// TestStopLoopEndsTheLoop: a loop timed for a minute ends at a stop-loop
// after its current cycle; the loop's done goes out before the stop's,
// and a stop with no loop running is done at once.
func TestStopLoopEndsTheLoop(t *testing.T) {
	done := make(chan []protocol.Reply, 1)
	go func() {
		done <- serve(t,
			protocol.Command{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem"}},
			protocol.Command{ID: 2, Op: protocol.OpLoop, Key: "S", TTL: time.Second, Loop: &protocol.Loop{Duration: time.Minute}},
			protocol.Command{ID: 3, Op: protocol.OpStopLoop},
			protocol.Command{ID: 4, Op: protocol.OpStopLoop},
		)
	}()
	var replies []protocol.Reply
	select {
	case replies = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop timed for a minute did not stop")
	}
	var order []int64
	for _, r := range replies {
		if r.Done {
			if r.Error != "" {
				t.Fatalf("command %d: %s", r.ID, r.Error)
			}
			order = append(order, r.ID)
		}
	}
	if fmt.Sprint(order) != "[1 2 3 4]" {
		t.Fatalf("commands done in the order %v, want [1 2 3 4]", order)
	}
}

// TestStopAfterCheck: a write asked to stop after its lease check stops
// its process only when the check passes, and only once the check note
// has gone out to the harness (the harness waits for it before it counts
// the pause); a write not asked to never stops, and a lapsed lease is not
// cleared.
func TestStopAfterCheck(t *testing.T) {
	cases := []struct {
		name          string
		validity      time.Duration
		stopAsked     bool
		cleared, stop bool
	}{
		{"check passes, stop asked", time.Minute, true, true, true},
		{"check passes, no stop asked", time.Minute, false, true, false},
		{"lease lapsed, stop asked", -time.Second, true, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			buf := bufio.NewWriter(&out)
			l := clients.Lease{Key: "L", Token: "tok", Start: history.Monotonic(), Validity: c.validity}
			s := &state{init: protocol.Init{CheckLease: true}, leases: map[string]clients.Lease{"L": l}, out: json.NewEncoder(buf), buf: buf,
				wall: time.Now, lastID: 7} // the write's invocation went out already
			stops, sentBeforeStop := 0, false
			old := stopSelf
			stopSelf = func() error {
				stops++
				sentBeforeStop = strings.Contains(out.String(), `"op":"check"`)
				return nil
			}
			defer func() { stopSelf = old }()
			if got := s.cleared(protocol.Command{ID: 7, Op: history.OpWrite, Key: "L", StopAfterCheck: c.stopAsked}, l); got != c.cleared {
				t.Fatalf("cleared = %v, want %v", got, c.cleared)
			}
			if (stops == 1) != c.stop || stops > 1 {
				t.Fatalf("stopped %d times, want a stop: %v", stops, c.stop)
			}
			if c.stop && !sentBeforeStop {
				t.Fatalf("the process stopped before its check note reached the harness (sent: %q)", out.String())
			}
			_ = buf.Flush()
			if noted := strings.Contains(out.String(), `"op":"check"`); noted != c.stop {
				t.Fatalf("check note sent: %v, want %v (%q)", noted, c.stop, out.String())
			}
		})
	}
}

// TestAcquireWaitNeedsAWaiter: an acquire with a wait goes to the lock's
// AcquireWait; a lock that is no clients.Waiter does not try once in its
// place, it ends the acquire unknown, saying so.
func TestAcquireWaitNeedsAWaiter(t *testing.T) {
	replies := serve(t,
		protocol.Command{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem"}},
		protocol.Command{ID: 2, Op: history.OpAcquire, Key: "W", TTL: time.Second, Wait: time.Second},
	)
	var done *history.Event
	for _, r := range replies {
		if r.ID == 2 && r.Event != nil && r.Event.Type != history.Invoke {
			done = r.Event
		}
	}
	if done == nil || done.Type != history.Info || !strings.Contains(done.Detail, "does not wait") {
		t.Fatalf("a waiting acquire of a lock that tries once: %+v", done)
	}
	shared.mu.Lock()
	_, taken := shared.held["W"]
	shared.mu.Unlock()
	if taken {
		t.Fatal("the lock was tried once in the wait's place")
	}
}
