// replay.go: a defect's k of n. sim findings replay plays the story that
// shows a defect n times with the library, each run judged against its
// reference on the same story, and keeps the figures on the page, where
// the defect's line and report show them.

package findings

import (
	"fmt"
	"slices"
)

// DefaultReplays is how many times sim findings replay plays a defect's
// story.
const DefaultReplays = 5

// Replay is what n plays of a defect's story showed.
type Replay struct {
	// Slug is the defect's (Defect.Slug); Command the one command that
	// plays its story again, n times.
	Slug    string `json:"slug"`
	Command string `json:"command"`
	// K of N runs ended worse than the reference; RefK of the same N
	// runs the reference RefLock itself ended unsafe, leaked or hung.
	N       int    `json:"n"`
	K       int    `json:"k"`
	RefLock string `json:"ref_lock"`
	RefK    int    `json:"ref_k"`
	// Undecided runs (a machine too busy, a harness failure) count in N
	// and say why.
	Undecided []string `json:"undecided,omitempty"`
	// Counterfactual is the story's counterfactual played once, and what
	// it ended in ("" when the story has none).
	Counterfactual string `json:"counterfactual,omitempty"`
	// Date is when it played; Load the highest 1-minute load average
	// seen, on a machine of Cores cores.
	Date  string  `json:"date"`
	Load  float64 `json:"load"`
	Cores int     `json:"cores"`
}

// Busy says the replay played on a machine busier than its cores.
func (p Replay) Busy() bool { return busy(p.Load, p.Cores) }

// Words are the figures in a few words: "5 of 5; the reference redis 0
// of 5 (2026-12-07, load 0.4 on 2 cores)".
func (p Replay) Words() string {
	s := fmt.Sprintf("%d of %d; the reference %s %d of %d", p.K, p.N, p.RefLock, p.RefK, p.N)
	if len(p.Undecided) > 0 {
		s += fmt.Sprintf(" (%d undecided)", len(p.Undecided))
	}
	busy := ""
	if p.Busy() {
		busy = ": BUSY"
	}
	return s + fmt.Sprintf(" (%s, load %.1f on %d cores%s)", p.Date, p.Load, p.Cores, busy)
}

// SetReplay keeps p as its defect's replay, in place of an older one.
func (r *Report) SetReplay(p Replay) {
	if i := slices.IndexFunc(r.Replays, func(o Replay) bool { return o.Slug == p.Slug }); i >= 0 {
		r.Replays[i] = p
		return
	}
	r.Replays = append(r.Replays, p)
}

// replayOf is the defect's replay, nil when it was never replayed.
func (r *Report) replayOf(slug string) *Replay {
	if i := slices.IndexFunc(r.Replays, func(o Replay) bool { return o.Slug == slug }); i >= 0 {
		p := r.Replays[i]
		return &p
	}
	return nil
}

// KOfN is the defect's replay in a few words, or how to make one.
func (d Defect) KOfN() string {
	if d.Replay == nil {
		return "not replayed: sim findings replay " + d.Slug()
	}
	return d.Replay.Words()
}

// Replayed picks what plays the defect again: its first cell (a told
// story, shorter than a hunt's), else its first hunt.
func (d Defect) Replayed() Shown {
	if i := slices.IndexFunc(d.Shown, func(s Shown) bool { return s.StoryName != "" }); i >= 0 {
		return d.Shown[i]
	}
	return d.Shown[0]
}
