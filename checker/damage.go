package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/history"
)

// DamageResult is the check of the protected counter: did the storage
// accept a write that lost another's update or was based on a stale read?
type DamageResult struct {
	// Outcome is ok, illegal, unknown (porcupine timed out) or skipped
	// (no write in the history).
	Outcome  string `json:"outcome"`
	Accepted int    `json:"accepted"` // writes the storage accepted (Ok)
	Refused  int    `json:"refused"`  // writes the storage refused (Fail)
	Unknown  int    `json:"unknown"`  // writes whose outcome is unknown (Info)
	// LostUpdates are pairs of accepted writes that read the same value.
	LostUpdateCount int          `json:"lost_update_count"`
	LostUpdates     []LostUpdate `json:"lost_updates,omitempty"`
	// StaleWrites are accepted writes whose read no order of the writes
	// explains.
	StaleWriteCount int          `json:"stale_write_count"`
	StaleWrites     []StaleWrite `json:"stale_writes,omitempty"`
}

// LostUpdate is two accepted writes that read the same value: one of them
// overwrote the other.
type LostUpdate struct {
	Key     string        `json:"key"`
	Read    int64         `json:"read"`
	ClientA int           `json:"client_a"`
	ClientB int           `json:"client_b"`
	WriteA  history.Event `json:"write_a"` // the Ok events
	WriteB  history.Event `json:"write_b"`
}

// StaleWrite is an accepted write whose read value no order of the writes
// can have made current.
type StaleWrite struct {
	Key    string        `json:"key"`
	Client int           `json:"client"`
	Read   int64         `json:"read"`
	Write  history.Event `json:"write"` // the Ok event
	Detail string        `json:"detail"`
}

// The porcupine model of the counter. Its state is the set of values the
// counter may hold (a write whose outcome is unknown may or may not have
// happened); "any" is the value before the first write, which is whatever
// the first write read.

type counterValue struct {
	any bool
	v   int64
}

type counterState []counterValue // sorted; a set holding any is just {any}

type writeInput struct {
	key        string
	client     int
	read       int64
	wrote      int64
	hasRead    bool
	hasWrote   bool
	unknown    bool // Info: it may or may not have happened
	seq        int64
	completion int  // index in the parsed ops, for evidence
	seed       bool // sets the counter to wrote: the start of a segment
}

func segmentWrites(ops []porcupine.Operation) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	// The segments, each after the seed that starts it, share one slab:
	// a segment holds at least minSegment operations, so there are at
	// most len(ops)/(minSegment-1) seeds.
	slab := make([]porcupine.Operation, 0, len(ops)+len(ops)/max(minSegment-1, 1)+1)
	start := 0 // the current segment is slab[start:]
	maxRet, maxCall := int64(math.MinInt64), int64(math.MinInt64)
	for _, j := range byCall(ops) {
		o := ops[j]
		if cur := slab[start:]; len(cur) >= minSegment && maxRet < o.Call {
			// The writes in cur that can be last: returned after the
			// latest call.
			var last *porcupine.Operation
			n := 0
			for j := range cur {
				if cur[j].Return >= maxCall {
					last = &cur[j]
					n++
				}
			}
			if in := last.Input.(writeInput); n == 1 && in.hasWrote && !in.unknown {
				out = append(out, cur[:len(cur):len(cur)])
				seed := writeInput{key: in.key, client: in.client, wrote: in.wrote, hasWrote: true, seq: in.seq, completion: -1, seed: true}
				start = len(slab)
				slab = append(slab, porcupine.Operation{ClientId: last.ClientId, Input: seed, Call: maxRet, Return: maxRet})
				maxCall = maxRet
			}
		}
		slab = append(slab, o)
		maxRet, maxCall = max(maxRet, o.Return), max(maxCall, o.Call)
	}
	return append(out, slab[start:])
}

func (s counterState) allows(read int64) bool {
	for _, c := range s {
		if c.any || c.v == read {
			return true
		}
	}
	return false
}

func normalize(s counterState) counterState {
	for _, c := range s {
		if c.any {
			return counterState{{any: true}}
		}
	}
	slices.SortFunc(s, func(a, b counterValue) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	return slices.Compact(s)
}

// damageModel is partitioned by key, and each key's writes are cut
// further at every instant when no write is in flight (every write before
// it returned before every write after it was called) and one write is
// surely the last before it (no other write before it was called after it
// returned), so that the counter there surely holds that write's value: the
// next segment starts with a seed operation that sets it. Checking segments
// on their own is then exact, and keeps porcupine's per-partition cost (a
// bitset of the partition's size cloned at every step) small.
var damageModel = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		var out [][]porcupine.Operation
		for _, part := range partitionByKey(ops, func(o porcupine.Operation) string { return o.Input.(writeInput).key }) {
			out = append(out, segmentWrites(part)...)
		}
		return out
	},
	Init: func() interface{} { return counterState{{any: true}} },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		s := state.(counterState)
		in := input.(writeInput)
		if in.seed {
			return true, counterState{{v: in.wrote}}
		}
		var next counterValue
		happened := true
		switch {
		case in.hasRead && !s.allows(in.read):
			happened = false
		case in.hasWrote:
			next = counterValue{v: in.wrote}
		default:
			next = counterValue{any: true}
		}
		if !in.unknown {
			if !happened {
				return false, s
			}
			return true, counterState{next}
		}
		if !happened {
			return true, s
		}
		n := make(counterState, 0, len(s)+1)
		n = append(n, s...)
		return true, normalize(append(n, next))
	},
	Equal: func(a, b interface{}) bool { return slices.Equal(a.(counterState), b.(counterState)) },
	Hash: func(state interface{}) uint64 {
		var h uint64 = 14695981039346656037
		for _, c := range state.(counterState) {
			x := uint64(c.v)
			if c.any {
				x = 0x9e3779b97f4a7c15
			}
			h = (h ^ x) * 1099511628211
		}
		return h
	},
	DescribeOperation: func(input, _ interface{}) string {
		in := input.(writeInput)
		if in.seed {
			return fmt.Sprintf("%s holds %d (written by client %d, #%d)", in.key, in.wrote, in.client, in.seq)
		}
		s := fmt.Sprintf("client %d write %s", in.client, in.key)
		if in.hasRead {
			s += fmt.Sprintf(": read %d", in.read)
		}
		if in.hasWrote {
			s += fmt.Sprintf(", wrote %d", in.wrote)
		}
		if in.unknown {
			s += " (outcome unknown)"
		}
		return fmt.Sprintf("%s (#%d)", s, in.seq)
	},
	DescribeState: func(state interface{}) string {
		s := state.(counterState)
		if len(s) == 1 && s[0].any {
			return "?"
		}
		var parts []string
		for _, c := range s {
			parts = append(parts, fmt.Sprint(c.v))
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return fmt.Sprint(parts)
	},
}

func checkDamage(p *parsed, o Options) DamageResult {
	var r DamageResult
	byKey := map[string][]*op{}
	var keys []string
	ops := make([]porcupine.Operation, 0, p.writes)
	for i, w := range p.ops {
		if w.inv.Op != history.OpWrite {
			continue
		}
		k := w.key()
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], w)
		switch w.status() {
		case history.Ok:
			r.Accepted++
		case history.Fail:
			r.Refused++
			continue // no state change: no constraint
		default:
			r.Unknown++
		}
		in := writeInput{key: k, client: w.inv.Process, unknown: w.status() == history.Info, seq: w.completion().Seq, completion: i}
		in.read, in.hasRead = w.read()
		in.wrote, in.hasWrote = w.wrote()
		ops = append(ops, porcupine.Operation{
			ClientId: w.inv.Process - 1, Input: in, Output: nil,
			Call: w.inv.Time, Return: w.returnTime(p.horizon),
		})
	}
	if r.Accepted+r.Refused+r.Unknown == 0 {
		r.Outcome = OutcomeSkipped
		return r
	}
	slices.Sort(keys)
	for _, k := range keys {
		lost, stale := scanWrites(k, byKey[k])
		r.LostUpdateCount += len(lost)
		r.StaleWriteCount += len(stale)
		r.LostUpdates = appendCapped(r.LostUpdates, lost...)
		r.StaleWrites = appendCapped(r.StaleWrites, stale...)
	}
	if len(ops) == 0 {
		r.Outcome = OutcomeOk
		return r
	}
	res := porcupine.CheckOperationsTimeout(damageModel, ops, o.timeout())
	r.Outcome = outcome(res)
	if res == porcupine.Illegal && r.LostUpdateCount+r.StaleWriteCount == 0 {
		// The scans missed what porcupine found (a cycle of writes that
		// no order reaches): name the first accepted write that no
		// partial linearization of its key reaches.
		if sw, ok := unreachedWrite(p, ops, o); ok {
			r.StaleWriteCount++
			r.StaleWrites = append(r.StaleWrites, sw)
		}
	}
	return r
}

func unreachedWrite(p *parsed, ops []porcupine.Operation, o Options) (StaleWrite, bool) {
	_, info := porcupine.CheckOperationsVerbose(damageModel, ops, o.timeout())
	parts := damageModel.Partition(ops)
	lin := info.PartialLinearizationsOperations()
	for i, part := range parts {
		if i >= len(lin) {
			break
		}
		// Blame the first accepted write left out of a longest partial
		// linearization.
		var longest []porcupine.Operation
		for _, l := range lin[i] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		reached := map[int]bool{}
		for _, x := range longest {
			reached[x.Input.(writeInput).completion] = true
		}
		var best *op
		for _, x := range part {
			in := x.Input.(writeInput)
			if in.seed || reached[in.completion] || in.unknown {
				continue
			}
			w := p.ops[in.completion]
			if best == nil || w.done.Time < best.done.Time {
				best = w
			}
		}
		if best != nil {
			rd, _ := best.read()
			return StaleWrite{
				Key: best.key(), Client: best.inv.Process, Read: rd, Write: *best.done,
				Detail: fmt.Sprintf("no order of the writes to %s reaches this write's read of %d", best.key(), rd),
			}, true
		}
	}
	return StaleWrite{}, false
}

// scanWrites finds, among the writes to one key, the lost updates (accepted
// writes that read the same value) and the stale writes (accepted writes
// whose read value no other write invoked before them could have stored,
// besides the value before the first write). A write that may have
// happened with no recorded value (its read failed, or it never completed)
// may have stored any value: nothing read after its invocation is proven
// lost or stale.
func scanWrites(key string, ws []*op) (lost []LostUpdate, stale []StaleWrite) {
	// Which values could a write have read by the time it completed?
	// Those stored by writes (not refused) invoked earlier.
	produced := make(map[int64]int64, len(ws)) // value -> earliest invoke of a write storing it
	blind := int64(-1)                         // earliest invoke of a possible write of an unknown value
	for _, w := range ws {
		if w.status() == history.Fail {
			continue
		}
		v, ok := w.wrote()
		if !ok {
			if blind < 0 || w.inv.Time < blind {
				blind = w.inv.Time
			}
			continue
		}
		if t, seen := produced[v]; !seen || w.inv.Time < t {
			produced[v] = w.inv.Time
		}
	}
	blindBefore := func(w *op) bool { return blind >= 0 && blind < w.done.Time }

	accepted := make([]*op, 0, len(ws))
	for _, w := range ws {
		if _, ok := w.read(); ok && w.status() == history.Ok {
			accepted = append(accepted, w)
		}
	}
	slices.SortStableFunc(accepted, func(a, b *op) int { return cmp.Compare(a.done.Time, b.done.Time) })
	// A value the counter may hold more than once (written by two writes,
	// or the initial value written again) may rightly be read twice.
	stores := make(map[int64]int, len(ws))
	for _, w := range ws {
		if v, ok := w.wrote(); ok && w.status() != history.Fail {
			stores[v]++
		}
	}
	if len(accepted) > 0 {
		earliest := accepted[0]
		for _, w := range accepted {
			if w.inv.Time < earliest.inv.Time {
				earliest = w
			}
		}
		rd, _ := earliest.read()
		stores[rd]++
	}
	first := make(map[int64]*op, len(accepted))
	for _, w := range accepted {
		rd, _ := w.read()
		if stores[rd] > 1 || blindBefore(w) {
			continue
		}
		if f, ok := first[rd]; ok {
			lost = append(lost, LostUpdate{
				Key: key, Read: rd, ClientA: f.inv.Process, ClientB: w.inv.Process, WriteA: *f.done, WriteB: *w.done,
			})
			continue
		}
		first[rd] = w
	}
	var initial *int64
	byInvoke := append([]*op(nil), accepted...)
	slices.SortStableFunc(byInvoke, func(a, b *op) int { return cmp.Compare(a.inv.Time, b.inv.Time) })
	for _, w := range byInvoke {
		rd, _ := w.read()
		if t, ok := produced[rd]; ok && t < w.done.Time {
			if wv, _ := w.wrote(); wv != rd || t < w.inv.Time {
				continue
			}
		}
		if blindBefore(w) {
			continue
		}
		if initial == nil {
			initial = &rd // the first write read the counter's initial value
			continue
		}
		if *initial == rd {
			continue // a lost update, reported above
		}
		stale = append(stale, StaleWrite{
			Key: key, Client: w.inv.Process, Read: rd, Write: *w.done,
			Detail: fmt.Sprintf("read %d, which no write before it stored (the counter started at %d)", rd, *initial),
		})
	}
	return lost, stale
}

func appendCapped[T any](list []T, xs ...T) []T {
	for _, x := range xs {
		if len(list) >= MaxEvidence {
			break
		}
		list = append(list, x)
	}
	return list
}
