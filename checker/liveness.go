package checker

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/locksim/locksim/history"
)

// ExpirySlack is added to a lease's TTL before the checker counts the lock
// as expired on the server.
const ExpirySlack = time.Second

// LivenessResult is the liveness check: a lock that stayed held with no
// live holder, and (with Options.MaxGap) no grant for too long.
type LivenessResult struct {
	// Outcome is ok, illegal (a leak or a stall) or skipped (no acquire).
	Outcome   string  `json:"outcome"`
	LeakCount int     `json:"leak_count"`
	Leaks     []Leak  `json:"leaks,omitempty"`
	Stalls    []Stall `json:"stalls,omitempty"`
}

// Leak is a lock refused to a client after every earlier holder was gone,
// or refused as held when no client had ever held it (Holder 0, Gone
// "never held": the lock server counted someone else's lock as this one,
// as two names with one 32-bit hash do).
type Leak struct {
	Key string `json:"key"`
	// Holder is the last holder to go, Acquire its acquire's completion.
	Holder  int           `json:"holder"`
	Acquire history.Event `json:"acquire"`
	// Gone is how it went: released, crashed or expired; GoneAt when (a
	// refusal proves a leak ExpirySlack after a crash or an expiry);
	// Release the event that says so (the release's Ok, the crash; the
	// grant, extend or renewal that set the expiry).
	Gone    string        `json:"gone"`
	GoneAt  int64         `json:"gone_at"`
	Release history.Event `json:"release"`
	// FailedAcquire is the first acquire refused afterwards; Failures
	// counts them all.
	FailedAcquire history.Event `json:"failed_acquire"`
	Failures      int           `json:"failures"`
}

// Stall is a span longer than Options.MaxGap with acquires attempted and
// none granted.
type Stall struct {
	Key  string `json:"key"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
	// Since is the last grant before the span (or the first attempt),
	// Failed the last refused acquire in it.
	Since    history.Event `json:"since"`
	Failed   history.Event `json:"failed"`
	Attempts int           `json:"attempts"`
}

// NeverHeld is a Leak's Gone when no client had held the lock at all.
const NeverHeld = "never held"

// Sentence says what the leak is, citing the operations that prove it.
func (l Leak) Sentence() string {
	if l.Gone == NeverHeld {
		return fmt.Sprintf("lock %s was refused as held to client %d (acquire #%d at %s) though no client had held it (%d refused acquires)",
			l.Key, l.FailedAcquire.Process, l.FailedAcquire.Seq, secs(l.FailedAcquire.Time), l.Failures)
	}
	return fmt.Sprintf("lock %s stayed held after client %d %s at %s: client %d's acquire #%d failed at %s (%d failed acquires)",
		l.Key, l.Holder, l.Gone, secs(l.GoneAt), l.FailedAcquire.Process, l.FailedAcquire.Seq, secs(l.FailedAcquire.Time), l.Failures)
}

type holder struct {
	o      *op
	gone   int64 // surely gone from the lock server (slack included)
	at     int64 // when it went: the release, the crash, the expiry
	kind   string
	goneEv *history.Event
}

func checkLiveness(p *parsed, o Options) LivenessResult {
	var r LivenessResult
	acquires := map[string][]*op{}
	releases := map[procKey][]*op{}
	extends := map[procKey][]*op{}
	renewals := map[procKey][]history.Event{}
	for _, n := range p.notes {
		if n.Op == history.OpRenew {
			pk := procKey{n.Process, n.Key}
			renewals[pk] = append(renewals[pk], n)
		}
	}
	var keys []string
	for _, x := range p.ops {
		pk := procKey{x.inv.Process, x.key()}
		switch x.inv.Op {
		case history.OpAcquire:
			if _, ok := acquires[pk.key]; !ok {
				keys = append(keys, pk.key)
			}
			acquires[pk.key] = append(acquires[pk.key], x)
		case history.OpRelease:
			releases[pk] = append(releases[pk], x)
		case history.OpExtend:
			extends[pk] = append(extends[pk], x)
		}
	}
	if len(keys) == 0 {
		r.Outcome = OutcomeSkipped
		return r
	}
	sort.Strings(keys)
	for _, k := range keys {
		all := acquires[k] // ordered by invocation
		hs := make([]holder, 0, len(all))
		// The acquire's release is before the same client's next
		// acquire of this key.
		next := make([]int64, len(all))
		seenNext := map[int]int64{}
		for i := len(all) - 1; i >= 0; i-- {
			next[i] = math.MaxInt64
			if t, ok := seenNext[all[i].inv.Process]; ok {
				next[i] = t
			}
			seenNext[all[i].inv.Process] = all[i].inv.Time
		}
		for i, a := range all {
			if a.status() == history.Fail {
				continue
			}
			hs = append(hs, goneTime(p, a, next[i], releases, extends, renewals))
		}
		// Leaks: every holder invoked before the refusal completed was
		// gone before it was invoked.
		prefMax := make([]int, len(hs)) // index of the latest gone holder
		for i := range hs {
			prefMax[i] = i
			if i > 0 && hs[prefMax[i-1]].gone >= hs[i].gone {
				prefMax[i] = prefMax[i-1]
			}
		}
		// A refusal proves a leak only when no other client's acquire
		// overlaps it: a contender (Redlock's split votes, or an acquire
		// that is granted a moment later) holds the key for a while even
		// when its own acquire fails.
		contended := contendedAcquires(all)
		leaks := map[int]*Leak{}
		var order []int
		var phantom *Leak // refused as held, and no client held it before
		for i, f := range all {
			if f.status() != history.Fail || contended[i] {
				continue
			}
			n := sort.Search(len(hs), func(i int) bool { return hs[i].o.inv.Time >= f.done.Time })
			if n == 0 {
				if f.done.Reason != history.ReasonHeld {
					continue
				}
				if phantom == nil {
					phantom = &Leak{Key: k, Gone: NeverHeld, FailedAcquire: *f.done}
				}
				phantom.Failures++
				continue
			}
			last := hs[prefMax[n-1]]
			if last.gone >= f.inv.Time {
				continue
			}
			if l := leaks[prefMax[n-1]]; l != nil {
				l.Failures++
				continue
			}
			leaks[prefMax[n-1]] = &Leak{
				Key: k, Holder: last.o.inv.Process, Acquire: *last.o.completion(),
				Gone: last.kind, GoneAt: last.at, Release: *last.goneEv,
				FailedAcquire: *f.done, Failures: 1,
			}
			order = append(order, prefMax[n-1])
		}
		if phantom != nil {
			r.LeakCount++
			r.Leaks = appendCapped(r.Leaks, *phantom)
		}
		for _, i := range order {
			r.LeakCount++
			r.Leaks = appendCapped(r.Leaks, *leaks[i])
		}
		if o.MaxGap > 0 {
			r.Stalls = append(r.Stalls, stalls(k, all, o.MaxGap)...)
		}
	}
	r.Outcome = OutcomeOk
	if r.LeakCount+len(r.Stalls) > 0 {
		r.Outcome = OutcomeIllegal
	}
	return r
}

// contendedAcquires marks the acquires (ordered by invocation) that
// overlap another acquire. A process has one operation in flight at a
// time, so any overlap is with another process.
func contendedAcquires(all []*op) []bool {
	out := make([]bool, len(all))
	end := func(o *op) int64 {
		if o.pending {
			return math.MaxInt64
		}
		return o.done.Time
	}
	maxEnd := int64(math.MinInt64) // latest end among the acquires before i
	for i, o := range all {
		if maxEnd >= o.inv.Time || (i+1 < len(all) && all[i+1].inv.Time <= end(o)) {
			out[i] = true
		}
		maxEnd = max(maxEnd, end(o))
	}
	return out
}

// goneTime says when the holder of acquire a was surely gone from the lock
// server. A lease without expiry (TTL 0 on the grant: a PostgreSQL session
// lock) goes when its release returns Ok or its process crashes (plus
// ExpirySlack for the server to notice). A lease with expiry goes when its
// release returns Ok or it expires (plus ExpirySlack): a crash leaves the
// key in place. The server applies a TTL at the latest when it answers, so
// the expiry is counted from the grant's completion, moved later by
// extends and watchdog renewals. An acquire whose outcome is unknown is
// read as granted with the TTL it asked for.
func goneTime(p *parsed, a *op, next int64, releases, extends map[procKey][]*op, renewals map[procKey][]history.Event) holder {
	h := holder{o: a, gone: math.MaxInt64, at: math.MaxInt64}
	set := func(gone, at int64, kind string, ev *history.Event) {
		if gone < h.gone {
			h.gone, h.at, h.kind, h.goneEv = gone, at, kind, ev
		}
	}
	pk := procKey{a.inv.Process, a.key()}
	after := a.inv.Time
	// within trims a list ordered by time to [after, next].
	within := func(n int, time func(int) int64) (int, int) {
		i := sort.Search(n, func(i int) bool { return time(i) >= after })
		j := sort.Search(n, func(i int) bool { return time(i) > next })
		return i, max(i, j)
	}
	rels := releases[pk]
	i, j := within(len(rels), func(i int) int64 { return rels[i].inv.Time })
	for _, rel := range rels[i:j] {
		if rel.status() == history.Ok && TokensMatch(a.token(), rel.token()) {
			set(rel.done.Time, rel.done.Time, "released", rel.done)
			break
		}
	}
	ttl, ttlEv := a.done.TTL, a.done
	if a.status() != history.Ok {
		ttl, ttlEv = a.inv.TTL, a.completion()
	}
	if ttl <= 0 {
		cs := p.crashes[a.inv.Process]
		for ci := range cs {
			if c := &cs[ci]; c.Time >= after {
				set(c.Time+int64(ExpirySlack), c.Time, "crashed", c)
				break
			}
		}
		return h
	}
	exp := ttlEv.Time + ttl
	exts := extends[pk]
	i, j = within(len(exts), func(i int) int64 { return exts[i].inv.Time })
	for _, e := range exts[i:j] {
		if e.status() == history.Fail || !TokensMatch(a.token(), e.token()) {
			continue
		}
		t := e.done.TTL
		if t == 0 {
			t = e.inv.TTL
		}
		if t <= 0 || e.pending {
			return h // extended for good, or by a request that may land any time
		}
		if e.done.Time+t > exp {
			exp, ttlEv = e.done.Time+t, e.done
		}
	}
	// A renewal that failed may still have been applied (a timeout, or
	// some of Redlock's nodes): it counts with the lease's last TTL.
	rens := renewals[pk]
	i, j = within(len(rens), func(i int) int64 { return rens[i].Time })
	for ni := range rens[i:j] {
		n := &rens[i+ni]
		if !TokensMatch(a.token(), n.Token) {
			continue
		}
		if n.TTL > 0 {
			ttl = n.TTL
		}
		if n.Time+ttl > exp {
			exp, ttlEv = n.Time+ttl, n
		}
	}
	set(exp+int64(ExpirySlack), exp, "expired", ttlEv)
	return h
}

func stalls(key string, all []*op, maxGap time.Duration) []Stall {
	var grants []*op
	for _, a := range all {
		if a.status() == history.Ok {
			grants = append(grants, a)
		}
	}
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].done.Time < grants[j].done.Time })
	byPrev := map[int]*Stall{}
	var order []int
	for _, f := range all {
		if f.status() == history.Ok {
			continue
		}
		end := f.completion().Time
		n := sort.Search(len(grants), func(i int) bool { return grants[i].done.Time > end })
		since := all[0].inv
		if n > 0 {
			since = grants[n-1].done
		}
		if end-since.Time <= int64(maxGap) {
			continue
		}
		s := byPrev[n]
		if s == nil {
			s = &Stall{Key: key, From: since.Time, Since: *since}
			byPrev[n] = s
			order = append(order, n)
		}
		s.Attempts++
		if end >= s.To {
			s.To, s.Failed = end, *f.completion()
		}
	}
	var out []Stall
	for _, n := range order {
		out = append(out, *byPrev[n])
	}
	return out
}
