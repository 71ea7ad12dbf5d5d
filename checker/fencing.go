package checker

import (
	"sort"

	"locksim/history"
)

// FencingResult is the fencing check: stale writes refused (the fence
// working), and tokens that went backwards (the fence broken).
type FencingResult struct {
	// Outcome is ok, illegal (a token went backwards or repeated) or
	// skipped (no fencing token in the history).
	Outcome string `json:"outcome"`
	// Refused counts the writes refused with a fencing token: the fence
	// working. RefusedWrites lists their Fail events.
	Refused       int             `json:"refused"`
	RefusedWrites []history.Event `json:"refused_writes,omitempty"`
	// BackwardsCount counts the tokens that went backwards: a grant not
	// above an earlier grant of the same key, or an accepted write below
	// one already accepted.
	BackwardsCount int               `json:"backwards_count"`
	Backwards      []FenceRegression `json:"backwards,omitempty"`
}

// FenceRegression is a fencing token that went backwards or repeated.
type FenceRegression struct {
	Key string `json:"key"`
	// Kind is "grant" (an acquire handed out a token not above an earlier
	// one) or "write" (storage accepted a write below one it had accepted).
	Kind     string `json:"kind"`
	Fence    int64  `json:"fence"`
	Previous int64  `json:"previous"`
	// Event is the grant or write; Earlier the one with the higher token.
	Event   history.Event `json:"event"`
	Earlier history.Event `json:"earlier"`
}

func checkFencing(p *parsed) FencingResult {
	var r FencingResult
	type item struct {
		o    *op
		kind string
	}
	var items []item
	seen := false
	for _, o := range p.ops {
		if o.fence() != 0 {
			seen = true
		}
		switch {
		case o.inv.Op == history.OpAcquire && o.status() == history.Ok && o.fence() != 0:
			items = append(items, item{o, "grant"})
		case o.inv.Op == history.OpWrite && o.status() == history.Ok && o.fence() != 0:
			items = append(items, item{o, "write"})
		case o.inv.Op == history.OpWrite && o.status() == history.Fail && o.fence() != 0:
			r.Refused++
			r.RefusedWrites = appendCapped(r.RefusedWrites, o.done)
		}
	}
	if !seen {
		r.Outcome = OutcomeSkipped
		return r
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].o.done.Time < items[j].o.done.Time })
	type high struct {
		fence int64
		ev    history.Event
	}
	highest := map[[2]string]high{}
	for _, it := range items {
		k := [2]string{it.kind, it.o.key()}
		f := it.o.fence()
		h, ok := highest[k]
		broken := ok && (f < h.fence || (it.kind == "grant" && f == h.fence))
		if broken {
			r.BackwardsCount++
			r.Backwards = appendCapped(r.Backwards, FenceRegression{
				Key: it.o.key(), Kind: it.kind, Fence: f, Previous: h.fence, Event: it.o.done, Earlier: h.ev,
			})
		}
		if !ok || f > h.fence {
			highest[k] = high{f, it.o.done}
		}
	}
	r.Outcome = OutcomeOk
	if r.BackwardsCount > 0 {
		r.Outcome = OutcomeIllegal
	}
	return r
}
