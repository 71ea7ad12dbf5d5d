package checker

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/locksim/locksim/history"
)

// Notice is what users of a lock library ask of it most: how long after
// the servers gave its lock away a holder learned it (its time to
// notice), and how long two clients both believed they held one lock.
// Both are read from a history alone (Notices).
//
// A client believes it holds a key from its acquire's Ok until the
// earliest of its release's invocation, its crash, its next grant of the
// key, the moment it learns the lock is gone, and the history's end. Its
// lease's end is not one: that is what the client could know, not what
// it was told (the mutual-exclusion check's Hold ends there, as a
// careful client would).
//
// The servers gave the lock away when another client's acquire of the
// key was granted while the holder had not released it, crashed or been
// granted it again: the give-away as the history observed it, which is
// no earlier than the lease's expiry at the server.
//
// The holder learns it by an event of its own that says its lease is
// gone: its check before a write found it run out (LearnedByCheck), its
// watchdog's renewal found it gone (LearnedByRenewal: a renew note with
// reason not-held or expired), or a command was refused because of it
// (LearnedByRefusal: a release or extend refused not-held or expired, a
// write the storage refused for its stale fence or token, any command
// refused no-lease because the client had dropped the lease). A lock
// whose session expires (ZooKeeper, etcd) tells its holder only through
// one of these.
type Notice struct {
	// GivenAway says the servers gave a held lock to another client.
	// False: there was nothing to measure (no lock was given away while
	// held), and the fields below but End and Overlap are empty; that
	// is not a time to notice of 0.
	GivenAway bool `json:"given_away"`
	// GiveAways counts the grants that gave a held lock away; the
	// figures are the first one's.
	GiveAways int `json:"give_aways,omitempty"`
	// Key is the lock, Holder the client it was taken from, Taker the
	// client it was given to, GivenAt the taker's grant (ns, the
	// history's clock).
	Key     string `json:"key,omitempty"`
	Holder  int    `json:"holder,omitempty"`
	Taker   int    `json:"taker,omitempty"`
	GivenAt int64  `json:"given_at,omitempty"`
	// Learned says the holder learned it, By how, at LearnedAt (ns), by
	// the event Event (its Seq, Op and Reason say which). False: never,
	// within the history (until End).
	Learned   bool          `json:"learned"`
	By        string        `json:"by,omitempty"`
	LearnedAt int64         `json:"learned_at,omitempty"`
	Event     history.Event `json:"event,omitzero"`
	// After is LearnedAt - GivenAt: the time to notice (negative when
	// the holder learned it before the lock was given away); 0 when it
	// never learned.
	After time.Duration `json:"after,omitempty"`
	// End is the history's last event (ns): a holder that never learned
	// went on believing until then.
	End int64 `json:"end,omitempty"`
	// Overlap is how long, in all, two clients both believed they held
	// the same key (summed over the keys); 0 when they never did.
	Overlap time.Duration `json:"overlap"`
}

// How a holder learned its lock was gone.
const (
	LearnedByCheck   = "check"   // its lease check before a write
	LearnedByRenewal = "renewal" // its watchdog's renewal
	LearnedByRefusal = "refusal" // a command refused (release, extend, write)
)

// believed is one client's belief that it holds one key.
type believed struct {
	process int
	key     string
	token   string
	from    int64
	end     int64 // its release's invocation, crash, next grant, or the history's end
	// until is how far its own events can tell it the lease is gone:
	// end, or its release's completion when a release ended it.
	until int64
	// learned is the first event that told it, nil when none did.
	learned *history.Event
	by      string
}

// to is when it stopped believing.
func (b *believed) to() int64 {
	if b.learned != nil && b.learned.Time < b.end {
		return max(b.learned.Time, b.from)
	}
	return b.end
}

func notices(p *parsed) Notice {
	bs := beliefs(p)
	learn(p, bs)
	n := Notice{End: p.last, Overlap: time.Duration(bothBelieved(bs))}
	var first, from *believed
	byKey := map[string][]*believed{}
	for _, b := range bs {
		byKey[b.key] = append(byKey[b.key], b) // in the order they began
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		list := byKey[k]
		var active []*believed // begun before g, not ended by it
		for _, g := range list {
			active = slices.DeleteFunc(active, func(h *believed) bool { return h.end <= g.from })
			for _, h := range active {
				if h.process != g.process && h.from < g.from {
					if first == nil || g.from < first.from {
						first, from = g, h
					}
					n.GiveAways++
					break // a grant gives the lock away once, whoever held it
				}
			}
			active = append(active, g)
		}
	}
	if first == nil {
		return n
	}
	n.GivenAway, n.Key, n.Holder, n.Taker, n.GivenAt = true, first.key, from.process, first.process, first.from
	if e := from.learned; e != nil {
		n.Learned, n.By, n.LearnedAt, n.Event = true, from.by, e.Time, *e
		n.After = time.Duration(e.Time - first.from)
	}
	return n
}

// beliefs derives every belief from the grants, releases and crashes.
func beliefs(p *parsed) []*believed {
	type action struct {
		t, seq int64
		o      *op
		crash  *history.Event
	}
	var acts []action
	for _, o := range p.ops {
		switch {
		case o.inv.Op == history.OpAcquire && o.status() == history.Ok:
			acts = append(acts, action{t: o.done.Time, seq: o.done.Seq, o: o})
		case o.inv.Op == history.OpRelease:
			acts = append(acts, action{t: o.inv.Time, seq: o.inv.Seq, o: o})
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
	var all []*believed
	open := map[procKey]*believed{}
	end := func(pk procKey, t, until int64) {
		if b := open[pk]; b != nil {
			b.end, b.until = t, until
			delete(open, pk)
		}
	}
	for _, a := range acts {
		if a.crash != nil {
			for pk := range open {
				if pk.process == a.crash.Process {
					end(pk, a.t, a.t)
				}
			}
			continue
		}
		o := a.o
		pk := procKey{o.inv.Process, o.key()}
		if o.inv.Op == history.OpRelease {
			if b := open[pk]; b != nil && TokensMatch(b.token, o.token()) {
				until := p.last
				if !o.pending {
					until = o.done.Time
				}
				end(pk, a.t, until)
			}
			continue
		}
		end(pk, a.t, a.t) // granted again
		b := &believed{process: pk.process, key: pk.key, token: o.token(), from: a.t}
		all = append(all, b)
		open[pk] = b
	}
	for _, b := range open {
		b.end, b.until = p.last, p.last
	}
	return all
}

// learn finds, for each belief, the first event of its client that told
// it the lease was gone, from its grant until its release answered.
func learn(p *parsed, bs []*believed) {
	type told struct {
		e     *history.Event
		by    string
		key   string
		token string
	}
	var ts []told
	for i := range p.notes {
		n := &p.notes[i]
		if n.Op == history.OpRenew && (n.Reason == history.ReasonNotHeld || n.Reason == history.ReasonExpired) {
			ts = append(ts, told{n, LearnedByRenewal, n.Key, n.Token})
		}
	}
	for _, o := range p.ops {
		if by := learnedBy(o); by != "" {
			ts = append(ts, told{o.done, by, o.key(), o.token()})
		}
	}
	slices.SortStableFunc(ts, func(a, b told) int {
		if c := cmp.Compare(a.e.Time, b.e.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.e.Seq, b.e.Seq)
	})
	mine := map[procKey][]*believed{} // each in the order they began
	keys := map[int][]string{}
	for _, b := range bs {
		pk := procKey{b.process, b.key}
		if len(mine[pk]) == 0 {
			keys[b.process] = append(keys[b.process], b.key)
		}
		mine[pk] = append(mine[pk], b)
	}
	for _, t := range ts {
		ks := keys[t.e.Process]
		if t.key != "" {
			ks = []string{t.key}
		}
		for _, k := range ks {
			// A client's beliefs in one key follow one another: the
			// last one begun by then is the only one it can be.
			list := mine[procKey{t.e.Process, k}]
			i := sort.Search(len(list), func(i int) bool { return list[i].from > t.e.Time }) - 1
			if i < 0 {
				continue
			}
			if b := list[i]; b.learned == nil && TokensMatch(b.token, t.token) && t.e.Time <= b.until {
				b.learned, b.by = t.e, t.by
				break
			}
		}
	}
}

// learnedBy says how a refused operation told its client its lease was
// gone, or "" when it did not.
func learnedBy(o *op) string {
	if o.status() != history.Fail {
		return ""
	}
	switch r := o.done.Reason; {
	case r == history.ReasonNoLease:
		return LearnedByRefusal
	case o.inv.Op == history.OpWrite && r == history.ReasonExpired:
		return LearnedByCheck
	case o.inv.Op == history.OpWrite && (r == history.ReasonFence || r == history.ReasonToken):
		return LearnedByRefusal
	case (o.inv.Op == history.OpRelease || o.inv.Op == history.OpExtend) && (r == history.ReasonNotHeld || r == history.ReasonExpired):
		return LearnedByRefusal
	}
	return ""
}

// bothBelieved is how long, summed over the keys, two or more clients
// believed at once that they held the same key (ns).
func bothBelieved(bs []*believed) int64 {
	type edge struct {
		t     int64
		delta int
	}
	byKey := map[string][]edge{}
	for _, b := range bs {
		if to := b.to(); to > b.from {
			byKey[b.key] = append(byKey[b.key], edge{b.from, 1}, edge{to, -1})
		}
	}
	var total int64
	for _, es := range byKey {
		// Ends before starts at one instant: a belief that ends when
		// another begins does not overlap it.
		slices.SortFunc(es, func(a, b edge) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(a.delta, b.delta)
		})
		n := 0
		for i, e := range es {
			if n >= 2 {
				total += e.t - es[i-1].t
			}
			n += e.delta
		}
	}
	return total
}
