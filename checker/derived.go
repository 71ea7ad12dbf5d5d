package checker

import (
	"io"
	"math"

	"github.com/anishathalye/porcupine"

	"github.com/locksim/locksim/history"
)

// Derived is what a check derived from the history on its way to the
// verdict, kept for the reports to draw: the holds (every interval in which
// a client believed it held a key) and porcupine's linearization of them,
// so that drawing a checked run runs porcupine no second time.
type Derived struct {
	p     *parsed
	holds []*hold
	info  porcupine.LinearizationInfo
}

// Hold is an interval in which one client believed it held one key: from
// the Ok of its acquire (or of an extend that resumed a lapsed lease) until
// the earliest of the invoke of its release, its lease end (moved later by
// extends), its crash, its next grant of the key and, for a lease with no
// end, a renewal that found it gone.
type Hold struct {
	// ID numbers the holds from 1 in the order they began (a tie in the
	// order of the events); porcupine's operations name them (MutexInput).
	ID     int
	Key    string
	Client int
	Token  string
	Fence  int64
	// Grant is the Ok event that began it.
	Grant history.Event
	// From is when it began (Grant's time), To when it ended (its lease
	// end may be after the history's end). Open says it never ended: a
	// lease with no end, still held at the end of the history (To is 0).
	From, To int64
	Open     bool
	// End says how it ended: release, lease, crash, reacquire or lost;
	// empty while open.
	End string
	// EndEvent is what ended it: the release's invocation, the crash, the
	// new grant or the renewal (zero for a lease end or an open hold).
	EndEvent history.Event
}

// How a Hold ended.
const (
	HoldReleased   = endRelease   // its release was invoked
	HoldExpired    = endLease     // its lease ran out
	HoldCrashed    = endCrash     // its process crashed
	HoldReacquired = endReacquire // the client was granted the same key again
	HoldLost       = endLost      // a renewal found the lease gone
)

// Holds lists the holds, in the order they began.
func (d *Derived) Holds() []Hold {
	if d == nil {
		return nil
	}
	return exportHolds(d.holds)
}

// Visualize writes porcupine's HTML visualization of the mutual-exclusion
// check (the linearization the check found) to w, with the history's
// faults as spans (a Fault to its Heal, tagged with the target), its notes
// as points, and client crashes on the crashed client's row.
func (d *Derived) Visualize(w io.Writer) error {
	info := d.info // AddAnnotations appends to the copy's own list
	info.AddAnnotations(annotations(d.p))
	return porcupine.Visualize(mutexModel, info, w)
}

// Holds derives the holds of a history, valid or not, as a check would,
// without checking anything: for drawing a history so far.
func Holds(events []history.Event) []Hold {
	return exportHolds(holds(parse(events)))
}

func exportHolds(hs []*hold) []Hold {
	out := make([]Hold, len(hs))
	for i, h := range hs {
		x := Hold{
			ID: h.id, Key: h.key, Client: h.process, Token: h.token, Fence: h.fence,
			Grant: h.grantEvent(), From: h.start, To: h.end, End: h.endKind,
		}
		if h.end == math.MaxInt64 {
			x.To, x.Open = 0, true
		}
		if h.endEvent != nil && h.endKind != endLease {
			x.EndEvent = *h.endEvent
		}
		out[i] = x
	}
	return out
}
