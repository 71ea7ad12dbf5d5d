package checker

import (
	"sort"

	"github.com/locksim/locksim/history"
)

// FencingResult is the fencing check: stale writes refused (the fence
// working), and tokens that went backwards (the fence broken).
type FencingResult struct {
	// Outcome is ok, illegal (a token went backwards or repeated) or
	// skipped (no fencing token in the history).
	Outcome string `json:"outcome"`
	// Refused counts the writes the fence refused (Reason fence): the
	// fence working. RefusedWrites lists their Fail events.
	Refused       int             `json:"refused"`
	RefusedWrites []history.Event `json:"refused_writes,omitempty"`
	// BackwardsCount counts the tokens that went backwards: a grant not
	// above a grant of the same key that completed before it was invoked,
	// or an accepted write below one that completed before it was invoked.
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
	items := map[[2]string][]*op{} // kind, key -> its operations
	var order [][2]string
	seen := false
	for _, o := range p.ops {
		f := o.fence()
		if f != 0 {
			seen = true
		}
		kind := ""
		switch {
		case f == 0:
		case o.inv.Op == history.OpAcquire && o.status() == history.Ok:
			kind = "grant"
		case o.inv.Op == history.OpWrite && o.status() == history.Ok:
			kind = "write"
		case o.inv.Op == history.OpWrite && o.status() == history.Fail && fenceRefusal(o):
			r.Refused++
			r.RefusedWrites = appendCapped(r.RefusedWrites, *o.done)
		}
		if kind != "" {
			k := [2]string{kind, o.key()}
			if _, ok := items[k]; !ok {
				order = append(order, k)
			}
			items[k] = append(items[k], o)
		}
	}
	if !seen {
		r.Outcome = OutcomeSkipped
		return r
	}
	for _, k := range order {
		for _, b := range regressions(k[0], items[k]) {
			r.BackwardsCount++
			r.Backwards = appendCapped(r.Backwards, b)
		}
	}
	r.Outcome = OutcomeOk
	if r.BackwardsCount > 0 {
		r.Outcome = OutcomeIllegal
	}
	return r
}

// fenceRefusal says whether a failed write was refused by the storage's
// fence (a history without reasons: any storage refusal of a write that
// read).
func fenceRefusal(o *op) bool {
	if o.done.Reason != "" {
		return o.done.Reason == history.ReasonFence
	}
	_, read := o.read()
	return read
}

// regressions finds, among the grants or accepted writes of one key (ops
// ordered by invocation), those proven to have gone backwards: the op B
// is invoked after an op A completed, and B's fence is below A's (or, for
// grants, equal). Concurrent operations prove nothing: their completions
// may be stamped in either order.
func regressions(kind string, ops []*op) []FenceRegression {
	byDone := append([]*op(nil), ops...)
	sort.SliceStable(byDone, func(i, j int) bool { return byDone[i].done.Time < byDone[j].done.Time })
	var out []FenceRegression
	var high *op // the highest fence among the ops completed so far
	i := 0
	for _, b := range ops {
		for ; i < len(byDone) && byDone[i].done.Time < b.inv.Time; i++ {
			if high == nil || byDone[i].fence() > high.fence() {
				high = byDone[i]
			}
		}
		if high == nil {
			continue
		}
		if f, h := b.fence(), high.fence(); f < h || (kind == "grant" && f == h) {
			out = append(out, FenceRegression{
				Key: b.key(), Kind: kind, Fence: f, Previous: h, Event: *b.done, Earlier: *high.done,
			})
		}
	}
	return out
}

// writeBackwards counts the listed regressions of accepted writes (the
// storage's fence broken), as against grants.
func (r FencingResult) writeBackwards() int {
	n := 0
	for _, b := range r.Backwards {
		if b.Kind == "write" {
			n++
		}
	}
	return n
}
