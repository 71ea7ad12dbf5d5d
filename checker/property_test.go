package checker

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/locksim/locksim/history"
)

// model is a random history generated from who believes they hold the
// lock when, with the answers the checkers must give computed from the
// model itself.
type model struct {
	parts   [][]history.Event
	beliefs []belief
	grants  []grant
	writes  bool
	// lost: a write was made to read what the write before it read.
	lost bool
	// backwards: a grant was handed a fence not above one granted earlier.
	backwards bool
}

// belief is an interval [start, end) in which a client believes it holds
// the lock; end is math.MaxInt64 for a belief still held at the end.
type belief struct {
	client     int
	start, end int64
}

// grant is a granted acquire: the part holding its events, and the
// instant the server granted it (within the acquire's call).
type grant struct {
	part             int
	inv, done, point int64
}

func (m *model) overlaps() int {
	n := 0
	for i, a := range m.beliefs {
		for _, b := range m.beliefs[i+1:] {
			if a.client != b.client && max(a.start, b.start) < min(a.end, b.end) {
				n++
			}
		}
	}
	return n
}

// genLock has clients 1..3 take turns at lock L: each turn is granted
// around the end of the previous belief (sometimes before it: an overlap),
// with leases or none, extends, watchdog renewals, crashes, renewals that
// find the lease gone, refusals and unknown outcomes alongside.
func genLock(rng *rand.Rand, m *model) {
	r := func(a, b int64) int64 { return a + rng.Int63n(b-a+1) }
	busy := map[int]int64{} // client -> time of its last event
	free := func(at int64, not int) int {
		for range 10 {
			if c := 1 + rng.Intn(3); c != not && busy[c] < at {
				return c
			}
		}
		return 0
	}
	add := func(evs []history.Event) int {
		m.parts = append(m.parts, evs)
		return len(m.parts) - 1
	}
	t := r(0, 10)
	for turn := range r(3, 10) {
		c := free(t, 0)
		if c == 0 {
			t += 20
			continue
		}
		inv, done := t, t+r(1, 8)
		if o := free(inv, c); o != 0 && rng.Intn(4) == 0 {
			oi := inv + r(0, 3)
			od := max(oi+1, done) + r(0, 3)
			add(acq(o, "L", oi, od, []history.Type{fail, info}[rng.Intn(2)]))
			busy[o] = od
		}
		if rng.Intn(8) == 0 {
			add(acq(c, "L", inv, done, []history.Type{fail, info}[rng.Intn(2)]))
			busy[c], t = done, done+r(0, 10)
			continue
		}
		tok := fmt.Sprintf("t%d", turn)
		le := int64(0) // the client's lease end; 0: none
		mods := []mod{token(tok)}
		if rng.Intn(2) == 0 {
			le = max(1, done+r(-2, 40))
			mods = append(mods, lease(le), gttl(le-inv))
		}
		m.grants = append(m.grants, grant{part: add(acq(c, "L", inv, done, ok, mods...)), inv: inv, done: done, point: r(inv, done)})
		now := done
		for le != 0 && rng.Intn(3) == 0 {
			ei := now + r(1, 5)
			ed := ei + r(1, 5)
			if ed >= le {
				break
			}
			if rng.Intn(10) < 7 {
				nle := ed + r(1, 40)
				add(ext(c, "L", ei, ed, ok, token(tok), lease(nle)))
				le = max(le, nle)
			} else {
				add(ext(c, "L", ei, ed, fail, token(tok), reason(history.ReasonNotHeld)))
			}
			now = ed
		}
		for le == 0 && rng.Intn(2) == 0 {
			now += r(1, 10)
			add(renew(c, "L", tok, now, 30, ""))
		}
		var end int64
		switch x := rng.Intn(10); {
		case x < 6:
			end = now + r(1, 20)
			rd := end + r(1, 5)
			add(rel(c, "L", end, rd, []history.Type{ok, ok, fail, info}[rng.Intn(4)], token(tok)))
			now = rd
		case x < 8:
			end = now + r(1, 20)
			add(crash(c, end))
			now = end
		case le == 0:
			end = now + r(1, 20)
			add(renew(c, "L", tok, end, 0, history.ReasonNotHeld))
			now = end + r(1, 5)
			add(rel(c, "L", now, now+1, fail, token(tok), reason(history.ReasonNotHeld)))
			now++
		default:
			end = math.MaxInt64 // the lease runs out
			now = max(now, le)
		}
		if le != 0 {
			end = min(end, le)
		}
		m.beliefs = append(m.beliefs, belief{c, done * ms, end})
		if end != math.MaxInt64 {
			m.beliefs[len(m.beliefs)-1].end = end * ms
		} else {
			end = le
		}
		busy[c] = now
		t = end + r(-6, 10)
		if rng.Intn(10) == 0 {
			t = done + r(0, 20)
		}
		t = max(t, 0)
	}

	// Fences in the order the server granted; sometimes one repeated or
	// lowered after a grant that completed before it was invoked.
	sort.Slice(m.grants, func(i, j int) bool { return m.grants[i].point < m.grants[j].point })
	for i, g := range m.grants {
		m.parts[g.part][1].Fence = int64(10 + i)
	}
	if rng.Intn(4) == 0 {
		for _, b := range rng.Perm(len(m.grants)) {
			for _, a := range m.grants {
				if a.done < m.grants[b].inv {
					m.parts[m.grants[b].part][1].Fence = m.parts[a.part][1].Fence - rng.Int63n(2)
					m.backwards = true
					return
				}
			}
		}
	}
}

// genWrites adds writes of a counter C in a true serial order: each takes
// effect at a point within its call; refused writes (some without values:
// their read failed) and writes of unknown outcome (which did or did not
// happen) change nothing the model does not say; sometimes one write reads
// what the previous accepted write read: a lost update.
func genWrites(rng *rand.Rand, m *model) {
	r := func(a, b int64) int64 { return a + rng.Int63n(b-a+1) }
	m.writes = true
	n := r(4, 12)
	inject := rng.Intn(3) == 0
	busy := map[int]int64{}
	cur, lastRead := int64(0), int64(-1)
	point := r(0, 10)
	for i := range n {
		point += r(1, 12)
		inv, done := max(0, point-r(0, 6)), point+r(0, 6)
		p := 11
		for busy[p] > inv {
			p++
		}
		busy[p] = done
		switch x := rng.Intn(20); {
		case x < 2:
			m.parts = append(m.parts, write(p, "C", inv, done, fail, reason(history.ReasonRead)))
		case x < 4:
			m.parts = append(m.parts, write(p, "C", inv, done, fail, rw(cur, cur+1), reason(history.ReasonFence)))
		case x < 7:
			m.parts = append(m.parts, write(p, "C", inv, done, info, rw(cur, cur+1)))
			if rng.Intn(2) == 0 {
				cur++
			}
		case inject && !m.lost && i >= n/2 && lastRead >= 0:
			m.parts = append(m.parts, write(p, "C", inv, done, ok, rw(lastRead, lastRead+1)))
			cur, m.lost = lastRead+1, true
		default:
			m.parts = append(m.parts, write(p, "C", inv, done, ok, rw(cur, cur+1)))
			lastRead, cur = cur, cur+1
		}
	}
}

// TestCheckersAgreeWithModel: on random histories generated from a model,
// the checkers find an overlap exactly when two beliefs intersect (and as
// many), damage exactly when a lost update was made, a fence going
// backwards exactly when one was, and call the history unsafe exactly when
// one of those is proven.
func TestCheckersAgreeWithModel(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var overlapping, lost, backwards, writes int
	const n = 500
	for i := range n {
		m := &model{}
		genLock(rng, m)
		if rng.Intn(2) == 0 {
			genWrites(rng, m)
		}
		events := hist(m.parts...)
		r := mustCheck(t, events, Options{})
		want := m.overlaps()
		unsafe := m.lost || (!m.writes && (want > 0 || m.backwards))
		damage := r.Damage.LostUpdateCount+r.Damage.StaleWriteCount > 0
		if r.Mutex.OverlapCount != want || (r.Mutex.Outcome == OutcomeIllegal) != (want > 0) ||
			damage != m.lost || (r.Damage.Outcome == OutcomeIllegal) != m.lost ||
			(r.Fencing.BackwardsCount > 0) != m.backwards || (r.Verdict == Unsafe) != unsafe || r.Verdict == Unknown {
			var b bytes.Buffer
			_ = history.Write(&b, events)
			t.Fatalf("history %d: model: %d overlaps %v, lost update %v, backwards %v; checkers: %d overlaps (%s), damage %s %d+%d, %d backwards, %s: %s\n%s",
				i, want, m.beliefs, m.lost, m.backwards, r.Mutex.OverlapCount, r.Mutex.Outcome, r.Damage.Outcome,
				r.Damage.LostUpdateCount, r.Damage.StaleWriteCount, r.Fencing.BackwardsCount, r.Verdict, r.Summary, b.String())
		}
		if want > 0 {
			overlapping++
		}
		for _, c := range []struct {
			yes bool
			n   *int
		}{{m.lost, &lost}, {m.backwards, &backwards}, {m.writes, &writes}} {
			if c.yes {
				*c.n++
			}
		}
	}
	t.Logf("of %d histories: %d with overlaps, %d with writes, %d with a lost update, %d with a fence gone backwards", n, overlapping, writes, lost, backwards)
	for _, c := range []int{overlapping, lost, backwards, writes} {
		if c < n/20 || c > n-n/20 {
			t.Fatalf("not varied enough: %d with overlaps, %d with writes, %d lost, %d backwards", overlapping, writes, lost, backwards)
		}
	}
}
