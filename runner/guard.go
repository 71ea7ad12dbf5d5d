package runner

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/worker"
)

// MinTrialMargin is the smallest margin a generator trial is held to. The
// clients report stalls longer than 20ms (worker.StallReport), but a span
// of 20ms is one tick of a 10ms ticker missed, which an idle machine
// shows now and then (4 of 60 trials of a sweep were voided by stalls of
// 20 to 21ms): the guard needs more than timer jitter.
const MinTrialMargin = 30 * time.Millisecond

// trialMargin is the margin of a generator trial with this TTL: the
// scenario's, but at most a quarter of the TTL (and at least
// MinTrialMargin). A trial's lease is short, often shorter than a story's
// margin: a lease holder that the machine stalled for 66ms lost its 50ms
// lease with no fault at all, and its lost update was counted against
// the pause the schedule had planned (the stray damaged trials below the
// TTL). Held to a quarter of the lease, a violation at a point below the
// TTL is the fault's.
func trialMargin(margin, ttl time.Duration) time.Duration {
	return max(MinTrialMargin, min(margin, ttl/4))
}

// guard watches for the machine stalling under a story: it wakes every
// tick (worker.WatchStalls) and notes how late it woke. A story whose
// harness ran later than its margin may not have happened as timed, so
// its run ends unknown rather than with a verdict it did not earn.
type guard struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	worst time.Duration // the latest wake-up seen
	at    time.Duration // when, since the guard started
}

// GuardTick is how often the guard wakes to measure the harness's own
// stalls, in a story and in a generator's trials.
const GuardTick = 10 * time.Millisecond

func startGuard(tick time.Duration) *guard {
	g := &guard{stop: make(chan struct{}), done: make(chan struct{})}
	start := history.Monotonic()
	go func() {
		defer close(g.done)
		worker.WatchStalls(g.stop, tick, func(from, to int64) {
			late := time.Duration(to-from) - tick
			g.mu.Lock()
			if late > g.worst {
				g.worst, g.at = late, time.Duration(to-start)
			}
			g.mu.Unlock()
		})
	}()
	return g
}

// Stop ends the watch and returns the worst stall and when it happened.
func (g *guard) Stop() (worst, at time.Duration) {
	close(g.stop)
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.worst, g.at
}

// tooSlow says, when the worst stall exceeded margin, why the run cannot
// be trusted.
func tooSlow(worst, at, margin time.Duration) (string, bool) {
	if worst <= margin {
		return "", false
	}
	return fmt.Sprintf("the harness stalled %v around t=%.3fs, more than the %v margin",
		worst.Round(time.Millisecond), at.Seconds(), margin), true
}

// MaxPressure is the share of the story's time in which some task waited
// for a CPU (Linux's pressure stall information) above which the machine
// counts as too busy for a story to be held to its timing. It is read over
// stories of MinPressureSpan or more: over a shorter one, the bursts of
// the run's own processes say nothing.
const (
	MaxPressure     = 0.40
	MinPressureSpan = 500 * time.Millisecond
)

// cpuStall reads the total time (µs) in which some task waited for a CPU
// (/proc/pressure/cpu); ok is false where the kernel does not tell.
func cpuStall() (us int64, ok bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, found := strings.CutPrefix(f, "total="); found {
				n, err := strconv.ParseInt(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// pressure is the share of the wall time d in which some task waited for
// a CPU, from two cpuStall readings.
func pressure(from, to int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(to-from) / float64(d.Microseconds())
}

// tooBusy says why the story's timing cannot be trusted, if it cannot:
// stalled, when the harness or a client stalled longer than the margin (a
// client's pauses by the story excepted); contended, when besides the CPUs
// were contended for more than MaxPressure of the story's time, which
// slows every operation without any one stall. A stall alone voids a
// story with nothing to show it happened as told; contention explains a
// story that did not.
func (r *run) tooBusy(stalls map[int][]protocol.Stall) (why string, stalled, contended bool) {
	if why, slow := tooSlow(r.worst, r.worstAt, r.sc.Margin.Duration); slow {
		return why, true, true
	}
	if why, slow := clientTooSlow(stalls, r.paused, r.sc.Margin.Duration, r.rec.Base()); slow {
		return why, true, true
	}
	span := time.Duration(r.storyTo - r.storyFrom)
	if p := pressure(r.cpuFrom, r.cpuTo, span); r.cpuKnown && span >= MinPressureSpan && p > MaxPressure {
		return fmt.Sprintf("tasks waited for a CPU %.0f%% of the story's time (more than %.0f%%)", 100*p, 100*MaxPressure), false, true
	}
	return "", false, false
}

// clientStalls gathers the spans, within the story (or trial), in which a
// client process reported it did not run, on CLOCK_MONOTONIC. A client
// reports a stall when it runs again, so a report of the last trial's
// pause may arrive during this one: it is judged by when it happened,
// never by when it arrived.
//
// A stall is clipped to the story: the part of it before the story began
// (a client idle between two trials) is not the story's.
func (r *run) clientStalls() map[int][]protocol.Stall {
	from, to := r.rec.Base()+r.storyFrom, int64(math.MaxInt64)
	if r.storyTo != 0 {
		to = r.rec.Base() + r.storyTo
	}
	out := map[int][]protocol.Stall{}
	for id, c := range r.clients {
		for _, st := range c.Stalls() {
			if st.To > from && st.From < to {
				st.From, st.To = max(st.From, from), min(st.To, to)
				out[id] = append(out[id], st)
			}
		}
	}
	return out
}

// clientTooSlow says why a run cannot be trusted when a client did not
// run for longer than margin, other than while the story paused it.
// Stalls and pauses are on CLOCK_MONOTONIC; base is the record's time
// zero, for the message.
func clientTooSlow(stalls map[int][]protocol.Stall, paused map[int]spans, margin time.Duration, base int64) (string, bool) {
	for _, id := range slices.Sorted(maps.Keys(stalls)) {
		for _, st := range stalls[id] {
			d := time.Duration(st.To - st.From)
			if d <= margin || paused[id].covers(st.From, st.To, margin) {
				continue
			}
			return fmt.Sprintf("client %d did not run for %v around t=%.3fs, more than the %v margin",
				id, d.Round(time.Millisecond), float64(st.From-base)/1e9, margin), true
		}
	}
	return "", false
}

// spans are [from, to] intervals on CLOCK_MONOTONIC.
type spans [][2]int64

// end ends the last span at t, unless it ended earlier (a pause with a
// duration resumes by itself).
func (ss spans) end(t int64) {
	if n := len(ss); n > 0 && ss[n-1][1] > t {
		ss[n-1][1] = t
	}
}

// WakeUp is how long after a pause ends its client may still stall on
// its account: woken by SIGCONT, the process catches up with every timer
// and reply that waited (a stall of 26ms that began 1ms after a 300ms
// pause ended was seen on an idle machine).
const WakeUp = 100 * time.Millisecond

// covers says whether a stall [from, to] is a span's: it lies within the
// span, give or take slack before it and the WakeUp (or slack, if more)
// after it.
func (ss spans) covers(from, to int64, slack time.Duration) bool {
	for _, s := range ss {
		if from >= s[0]-int64(slack) && to <= s[1]+int64(max(slack, WakeUp)) {
			return true
		}
	}
	return false
}

// machine reports what the guard saw over the story or trial: the worst
// stalls, every client stall, the CPU pressure, and busy (why the timing
// could not be trusted, or "").
func (r *run) machine(stalls map[int][]protocol.Stall, margin time.Duration, busy string) history.Machine {
	m := history.Machine{MarginMS: ms(margin), HarnessStallMS: ms(r.worst), HarnessStallAt: r.worstAt.Seconds(), Busy: busy}
	for _, id := range slices.Sorted(maps.Keys(stalls)) {
		for _, st := range stalls[id] {
			m.ClientStalls = append(m.ClientStalls, history.ClientStall{Client: id, At: float64(st.From-r.rec.Base()) / 1e9,
				MS: ms(time.Duration(st.To - st.From)), Paused: r.paused[id].covers(st.From, st.To, margin)})
		}
	}
	if span := time.Duration(r.storyTo - r.storyFrom); r.cpuKnown && span > 0 {
		m.CPUPressure, m.CPUPressureKnown = pressure(r.cpuFrom, r.cpuTo, span), true
	}
	return m
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
