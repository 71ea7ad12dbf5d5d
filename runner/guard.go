package runner

import (
	"fmt"
	"sync"
	"time"
)

// DefaultMargin is how late the harness may run before a story's timing
// can no longer be trusted: the stories leave at least this much between
// the events whose order they depend on (a sleep of 1.1s past a 1s TTL).
const DefaultMargin = 100 * time.Millisecond

// guard watches for the machine stalling under a story: it wakes every
// tick and measures how late it woke. A story whose harness ran later than
// its margin may not have happened as timed, so its run ends unknown
// rather than with a verdict it did not earn.
type guard struct {
	tick time.Duration
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	worst time.Duration // the latest wake-up seen
	at    time.Duration // when, since the guard started
}

func startGuard(tick time.Duration) *guard {
	g := &guard{tick: tick, stop: make(chan struct{}), done: make(chan struct{})}
	go g.watch()
	return g
}

func (g *guard) watch() {
	defer close(g.done)
	start := time.Now()
	last := start
	t := time.NewTicker(g.tick)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			now := time.Now()
			late := now.Sub(last) - g.tick
			last = now
			g.mu.Lock()
			if late > g.worst {
				g.worst, g.at = late, now.Sub(start)
			}
			g.mu.Unlock()
		}
	}
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
	return fmt.Sprintf("unknown: the machine was too slow for this story: the harness stalled %v around t=%.3fs, more than the story's %v margin; run it again on a quieter machine",
		worst.Round(time.Millisecond), at.Seconds(), margin), true
}
