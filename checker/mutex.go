package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/history"
)

// MutexResult is the mutual-exclusion check: the lock as its clients saw it.
type MutexResult struct {
	// Outcome is ok, illegal, unknown (porcupine timed out) or skipped
	// (no lock was ever granted).
	Outcome string `json:"outcome"`
	// Holds counts the intervals in which a client believed it held a lock.
	Holds int `json:"holds"`
	// Operations counts the operations given to porcupine.
	Operations int `json:"operations"`
	// OverlapCount counts the pairs of overlapping holds; Overlaps lists
	// them (at most MaxEvidence).
	OverlapCount int       `json:"overlap_count"`
	Overlaps     []Overlap `json:"overlaps,omitempty"`
}

// Overlap is two clients that both believed they held the same lock.
type Overlap struct {
	Key     string `json:"key"`
	ClientA int    `json:"client_a"`
	ClientB int    `json:"client_b"`
	// From and To bound the time (ns) in which both held it.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// AcquireA and AcquireB are the Ok events that granted the two holds
	// (an extend Ok when a hold resumed after its lease had run out).
	AcquireA history.Event `json:"acquire_a"`
	AcquireB history.Event `json:"acquire_b"`
	// Detail says how each hold ended.
	Detail string `json:"detail,omitempty"`
}

// MaxEvidence bounds each list of findings in a Result; counts stay exact.
const MaxEvidence = 1000

// How a hold ended.
const (
	endOpen      = ""          // never, within the history
	endRelease   = "release"   // its release was invoked
	endLease     = "lease"     // its lease ran out
	endCrash     = "crash"     // its process crashed
	endReacquire = "reacquire" // the client was granted the same key again
	endLost      = "lost"      // a renewal found the lease gone
)

// hold is an interval in which one client believed it held one key.
type hold struct {
	id       int
	key      string
	process  int
	token    string
	fence    int64
	grant    *op // the acquire, or the extend that resumed a lapsed lease
	start    int64
	leaseEnd int64
	end      int64 // math.MaxInt64 while open
	endKind  string
	endOp    *op            // the release
	endEvent *history.Event // the release invoke, the crash, the new grant, or the renewal (nil for a lease end)
}

func (h *hold) grantEvent() history.Event { return *h.grant.done }

func (h *hold) close(t int64, kind string) {
	if h.leaseEnd != 0 && h.leaseEnd <= t {
		h.end, h.endKind = h.leaseEnd, endLease
		return
	}
	h.end, h.endKind = t, kind
}

func (h *hold) describeEnd() string {
	who := fmt.Sprintf("client %d", h.process)
	switch h.endKind {
	case endRelease:
		return fmt.Sprintf("%s invoked release at %s", who, secs(h.end))
	case endLease:
		return fmt.Sprintf("%s's lease ran out at %s", who, secs(h.end))
	case endCrash:
		return fmt.Sprintf("%s crashed at %s", who, secs(h.end))
	case endReacquire:
		return fmt.Sprintf("%s was granted the lock again at %s", who, secs(h.end))
	case endLost:
		return fmt.Sprintf("%s's renewal found the lease gone at %s", who, secs(h.end))
	}
	return who + " still held it at the end of the history"
}

type procKey struct {
	process int
	key     string
}

// TokensMatch says whether two events may name the same lease: their
// tokens are equal, or one of them is unknown (empty).
func TokensMatch(a, b string) bool { return a == "" || b == "" || a == b }

// holds derives, from the clients' operations, every interval in which a
// client believed it held a key: from its acquire's Ok until the earliest
// of the invoke of its release, its lease end (moved later by extends), its
// crash and, for a lease with no end (LeaseEnd 0), a renewal that found it
// gone (Reason not-held) or that the client did not send because its own
// clock said the lease had run out (Reason expired: a library's watchdog,
// worker protocol v2).
func holds(p *parsed) []*hold {
	type action struct {
		t     int64
		seq   int64
		o     *op
		crash *history.Event
		lost  *history.Event
	}
	ncrash := 0
	for _, cs := range p.crashes {
		ncrash += len(cs)
	}
	acts := make([]action, 0, len(p.ops)+len(p.notes)+ncrash)
	grants := 0 // the most holds there can be
	for _, o := range p.ops {
		switch o.inv.Op {
		case history.OpAcquire, history.OpExtend:
			if o.status() == history.Ok {
				acts = append(acts, action{t: o.done.Time, seq: o.done.Seq, o: o})
				grants++
			}
		case history.OpRelease:
			acts = append(acts, action{t: o.inv.Time, seq: o.inv.Seq, o: o})
		}
	}
	for i, n := range p.notes {
		if n.Op == history.OpRenew && (n.Reason == history.ReasonNotHeld || n.Reason == history.ReasonExpired) {
			acts = append(acts, action{t: n.Time, seq: n.Seq, lost: &p.notes[i]})
		}
	}
	for _, cs := range p.crashes {
		for i := range cs {
			acts = append(acts, action{t: cs[i].Time, seq: cs[i].Seq, crash: &cs[i]})
		}
	}
	slices.SortStableFunc(acts, func(a, b action) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})

	var all []*hold
	open := map[procKey]*hold{}
	lapsed := map[procKey]*hold{} // holds whose lease ran out, for extends
	// current returns the open hold of pk at time t, closing it first if
	// its lease ran out before t.
	current := func(pk procKey, t int64) *hold {
		h := open[pk]
		if h != nil && h.leaseEnd != 0 && h.leaseEnd < t {
			h.close(h.leaseEnd, endLease)
			delete(open, pk)
			lapsed[pk] = h
			return nil
		}
		return h
	}
	slab := make([]hold, 0, grants) // all points into it
	newHold := func(o *op, token string, fence, leaseEnd int64) {
		slab = append(slab, hold{
			id: len(all) + 1, key: o.key(), process: o.inv.Process, token: token,
			fence: fence, grant: o, start: o.done.Time, leaseEnd: leaseEnd, end: math.MaxInt64,
		})
		h := &slab[len(slab)-1]
		all = append(all, h)
		pk := procKey{h.process, h.key}
		open[pk] = h
		delete(lapsed, pk)
	}
	for _, a := range acts {
		if a.crash != nil {
			for pk, h := range open {
				if pk.process == a.crash.Process {
					h.close(a.t, endCrash)
					h.endEvent = a.crash
					delete(open, pk)
				}
			}
			for pk := range lapsed {
				if pk.process == a.crash.Process {
					delete(lapsed, pk)
				}
			}
			continue
		}
		if n := a.lost; n != nil {
			pk := procKey{n.Process, n.Key}
			if h := open[pk]; h != nil && h.leaseEnd == 0 && TokensMatch(h.token, n.Token) {
				h.close(a.t, endLost)
				h.endEvent = n
				delete(open, pk)
			}
			continue
		}
		o := a.o
		pk := procKey{o.inv.Process, o.key()}
		h := current(pk, a.t)
		switch o.inv.Op {
		case history.OpAcquire:
			if h != nil {
				h.close(a.t, endReacquire)
				h.endEvent = o.done
				delete(open, pk)
			}
			le := o.done.LeaseEnd
			if le != 0 && le <= a.t {
				continue // granted already expired: never held
			}
			newHold(o, o.token(), o.fence(), le)
		case history.OpExtend:
			le := o.done.LeaseEnd
			if h != nil && TokensMatch(h.token, o.token()) {
				if h.leaseEnd != 0 && le > h.leaseEnd {
					h.leaseEnd = le
				}
				continue
			}
			// An extend granted after the lease had run out: the client
			// believes it holds the lock again, from the extend's Ok.
			if l := lapsed[pk]; h == nil && l != nil && TokensMatch(l.token, o.token()) && le > a.t {
				f := o.fence()
				if f == 0 {
					f = l.fence
				}
				newHold(o, l.token, f, le)
			}
		case history.OpRelease:
			if h != nil && TokensMatch(h.token, o.token()) {
				h.close(a.t, endRelease)
				h.endOp, h.endEvent = o, o.inv
				delete(open, pk)
			}
			delete(lapsed, pk)
		}
	}
	for _, h := range open {
		if h.leaseEnd != 0 {
			h.close(h.leaseEnd, endLease)
		}
	}
	return all
}

// overlaps sweeps the holds of each key for pairs of clients whose holds
// intersect (as open intervals: a hold that ends at t and one that starts
// at t do not overlap, as porcupine reads closed operation intervals).
func overlaps(hs []*hold, last int64) (n int, out []Overlap) {
	byKey := map[string][]*hold{}
	var keys []string
	for _, h := range hs {
		if _, ok := byKey[h.key]; !ok {
			keys = append(keys, h.key)
		}
		byKey[h.key] = append(byKey[h.key], h)
	}
	slices.Sort(keys)
	for _, k := range keys {
		list := byKey[k]
		slices.SortStableFunc(list, func(a, b *hold) int { return cmp.Compare(a.start, b.start) })
		var active []*hold
		for _, h := range list {
			kept := active[:0]
			for _, a := range active {
				if a.end > h.start {
					kept = append(kept, a)
				}
			}
			active = kept
			for _, a := range active {
				if a.process == h.process || h.end <= h.start {
					continue
				}
				n++
				if len(out) >= MaxEvidence {
					continue
				}
				to := min(a.end, h.end)
				if to == math.MaxInt64 {
					to = last
				}
				out = append(out, Overlap{
					Key: k, ClientA: a.process, ClientB: h.process, From: h.start, To: to,
					AcquireA: a.grantEvent(), AcquireB: h.grantEvent(),
					Detail: a.describeEnd() + "; " + h.describeEnd(),
				})
			}
			if h.end > h.start {
				active = append(active, h)
			}
		}
	}
	return n, out
}

// Porcupine's view of the lock.

// MutexInput is the input of one operation of the mutex model.
type MutexInput struct {
	Kind   string // acquire, release, lease, crash, reacquire, lost
	Key    string
	Client int
	Hold   int // the hold this operation starts or ends
	Fence  int64
	Seq    int64 // the event that says so
}

// MutexOutput is the output of one operation of the mutex model.
type MutexOutput struct {
	Unknown bool // a release whose outcome is unknown
}

// MutexState is who holds the lock; the zero value is free.
type MutexState struct {
	Hold   int
	Client int
	Fence  int64
}

// mutexModel is the porcupine model of a lock, partitioned by key: its state
// is the hold that has it (free at first); an acquire needs it free, and
// only the end of that hold (its release, its lease running out, its
// client's crash or learning it lost the lease) frees it.
var mutexModel = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		return partitionByKey(ops, func(o porcupine.Operation) string { return o.Input.(MutexInput).Key })
	},
	Init: func() interface{} { return MutexState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s := state.(MutexState)
		in := input.(MutexInput)
		if in.Kind == history.OpAcquire {
			if s.Hold != 0 {
				return false, s
			}
			return true, MutexState{Hold: in.Hold, Client: in.Client, Fence: in.Fence}
		}
		if s.Hold != in.Hold {
			return false, s
		}
		return true, MutexState{}
	},
	Equal: func(a, b interface{}) bool { return a.(MutexState) == b.(MutexState) },
	Hash:  func(s interface{}) uint64 { return uint64(s.(MutexState).Hold) },
	DescribeOperation: func(input, output interface{}) string {
		in := input.(MutexInput)
		c := fmt.Sprintf("client %d", in.Client)
		switch in.Kind {
		case history.OpAcquire:
			s := fmt.Sprintf("%s acquire %s → granted", c, in.Key)
			if in.Fence != 0 {
				s += fmt.Sprintf(", fence %d", in.Fence)
			}
			return fmt.Sprintf("%s (#%d)", s, in.Seq)
		case history.OpRelease:
			s := fmt.Sprintf("%s release %s (#%d)", c, in.Key, in.Seq)
			if output.(MutexOutput).Unknown {
				s += " → outcome unknown"
			}
			return s
		case endLease:
			return fmt.Sprintf("%s's lease on %s runs out", c, in.Key)
		case endCrash:
			return fmt.Sprintf("%s crashes, losing %s (#%d)", c, in.Key, in.Seq)
		case endReacquire:
			return fmt.Sprintf("%s drops its old lease on %s (granted again, #%d)", c, in.Key, in.Seq)
		case endLost:
			return fmt.Sprintf("%s learns it lost %s (renewal #%d)", c, in.Key, in.Seq)
		}
		return fmt.Sprintf("%s %s %s", c, in.Kind, in.Key)
	},
	DescribeState: func(state interface{}) string {
		s := state.(MutexState)
		if s.Hold == 0 {
			return "free"
		}
		if s.Fence != 0 {
			return fmt.Sprintf("held by client %d (fence %d)", s.Client, s.Fence)
		}
		return fmt.Sprintf("held by client %d", s.Client)
	},
}

// segmentedMutexModel is mutexModel with each key's operations cut further
// at every instant when the lock is surely free and no operation is in
// flight: every operation before it returned before every operation after
// it was called, and every hold begun before it has ended before it. The
// state there is free in any linearization, so each segment is checked on
// its own from the initial state, and a history is linearizable exactly
// when every segment is. This keeps porcupine's per-partition cost (a
// bitset of the partition's size cloned at every step) small on long
// histories.
var segmentedMutexModel = func() porcupine.Model {
	m := mutexModel
	m.Partition = func(ops []porcupine.Operation) [][]porcupine.Operation {
		var out [][]porcupine.Operation
		for _, part := range mutexModel.Partition(ops) {
			out = append(out, segmentMutex(part)...)
		}
		return out
	}
	return m
}()

// minSegment is the fewest operations a segment holds before it is cut:
// many tiny partitions cost more in porcupine's set-up than they save.
var minSegment = 256

func segmentMutex(ops []porcupine.Operation) [][]porcupine.Operation {
	if len(ops) <= minSegment {
		return [][]porcupine.Operation{ops}
	}
	sorted := make([]porcupine.Operation, len(ops))
	for i, j := range byCall(ops) {
		sorted[i] = ops[j]
	}
	var out [][]porcupine.Operation
	start, open := 0, 0
	maxRet := int64(math.MinInt64)
	for i, o := range sorted {
		if i-start >= minSegment && open == 0 && maxRet < o.Call {
			out = append(out, sorted[start:i:i])
			start = i
		}
		if o.Input.(MutexInput).Kind == history.OpAcquire {
			open++
		} else {
			open--
		}
		maxRet = max(maxRet, o.Return)
	}
	if len(out) == 0 {
		// One segment: the key's operations as they were given, as
		// mutexModel has them.
		return [][]porcupine.Operation{ops}
	}
	return append(out, sorted[start:])
}

// byCall returns the order of ops by call time, operations called at once
// in the order given (an acquire before the end of the same hold): the
// indices of ops, which it leaves as they are (sorting them would move
// each operation many times).
func byCall(ops []porcupine.Operation) []int32 {
	order := make([]int32, len(ops))
	sorted := true
	for i := range order {
		order[i] = int32(i)
		sorted = sorted && (i == 0 || ops[i-1].Call <= ops[i].Call)
	}
	if !sorted {
		slices.SortFunc(order, func(a, b int32) int {
			if c := cmp.Compare(ops[a].Call, ops[b].Call); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	return order
}

// partitionByKey groups operations by key, keys in order, each group in
// the order of ops (ops itself when they share one key).
func partitionByKey(ops []porcupine.Operation, key func(porcupine.Operation) string) [][]porcupine.Operation {
	idx := map[string]int{}
	var keys []string
	var counts []int
	of := make([]int, len(ops)) // the index of each operation's key in keys
	for i, o := range ops {
		k := key(o)
		n, ok := 0, len(keys) > 0 && k == keys[0] // most histories have one key
		if !ok {
			n, ok = idx[k]
		}
		if !ok {
			n = len(keys)
			idx[k] = n
			keys = append(keys, k)
			counts = append(counts, 0)
		}
		of[i] = n
		counts[n]++
	}
	switch len(keys) {
	case 0:
		return nil
	case 1:
		return [][]porcupine.Operation{ops}
	}
	sorted := make([]int, len(keys)) // the key indices in key order
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	// The groups share one slab, each with room for its operations.
	out := make([][]porcupine.Operation, len(keys))
	place := make([]int, len(keys)) // key index -> its group in out
	slab := make([]porcupine.Operation, len(ops))
	off := 0
	for g, n := range sorted {
		out[g] = slab[off : off : off+counts[n]]
		place[n] = g
		off += counts[n]
	}
	for i, o := range ops {
		g := place[of[i]]
		out[g] = append(out[g], o)
	}
	return out
}

// mutexOperations builds the mutex model's operations from the holds: one
// acquire per hold, over the acquire's [invoke, ok], and one operation that
// ends it ([invoke, completion] of a release, a point at the lease end or
// crash). Failed acquires add no constraint and are left out.
func mutexOperations(p *parsed, hs []*hold) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, 2*len(hs))
	for _, h := range hs {
		in := MutexInput{Kind: history.OpAcquire, Key: h.key, Client: h.process, Hold: h.id, Fence: h.fence, Seq: h.grant.done.Seq}
		ops = append(ops, porcupine.Operation{
			ClientId: h.process - 1, Input: in, Output: MutexOutput{},
			Call: h.grant.inv.Time, Return: h.start,
		})
		if h.endKind == endOpen {
			continue
		}
		in.Kind, in.Seq = h.endKind, 0
		if h.endEvent != nil {
			in.Seq = h.endEvent.Seq
		}
		o := porcupine.Operation{ClientId: h.process - 1, Input: in, Output: MutexOutput{}, Call: h.end, Return: h.end}
		if h.endKind == endRelease {
			o.Return = h.endOp.returnTime(p.horizon)
			o.Output = MutexOutput{Unknown: h.endOp.status() == history.Info}
		}
		ops = append(ops, o)
	}
	return ops
}

func checkMutex(p *parsed, o Options) (MutexResult, []*hold, porcupine.LinearizationInfo) {
	hs := holds(p)
	var r MutexResult
	r.Holds = len(hs)
	r.OverlapCount, r.Overlaps = overlaps(hs, p.last)
	ops := mutexOperations(p, hs)
	r.Operations = len(ops)
	if len(ops) == 0 {
		r.Outcome = OutcomeSkipped
		return r, hs, porcupine.LinearizationInfo{}
	}
	res, info := porcupine.CheckOperationsVerbose(segmentedMutexModel, ops, o.timeout())
	r.Outcome = outcome(res)
	return r, hs, info
}

// Outcomes of one checker.
const (
	OutcomeOk      = "ok"
	OutcomeIllegal = "illegal"
	OutcomeUnknown = "unknown"
	OutcomeSkipped = "skipped"
)

func outcome(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return OutcomeOk
	case porcupine.Illegal:
		return OutcomeIllegal
	}
	return OutcomeUnknown
}

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return 10 * time.Second
	}
	return o.Timeout
}
