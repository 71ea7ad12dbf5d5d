// step.go is workshop mode (`sim run NAME --step`): before each step of a
// scripted story the run stops, says what the step will do, shows who
// holds the lock on which node and what each client believes (derived
// from the history so far), and waits for Enter.

package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"locksim/reports"
	"locksim/scenarios"
)

// stepMargin is how long before the first lease or TTL runs out a waiting
// step goes on by itself: the servers' clocks do not stop while the
// audience reads, and a lease that expires during the pause would tell
// another story than the scenario's.
const stepMargin = 500 * time.Millisecond

// beforeStep shows step i and waits for Enter on Options.Stdin; it does
// nothing unless Options.Step is set. EOF on Stdin means go on without
// waiting (a script, or stdin closed).
func (r *run) beforeStep(ctx context.Context, i int, st scenarios.Step) {
	if !r.o.Step {
		return
	}
	w := r.o.Log
	if w == nil {
		w = io.Discard
	}
	now := r.rec.Now()
	events := r.rec.Events()
	nodes := reports.LockNodes(r.sc)

	// No step number of the harness's own: a story's narration numbers
	// its steps as its source does (Kleppmann's 1. to 4.).
	fmt.Fprintf(w, "\n── t=%.3fs ──────────────────────────────────────\n", float64(now)/1e9)
	if st.Say != "" {
		fmt.Fprintf(w, "  %s\n", st.Say)
	}
	if st.Do != "say" {
		fmt.Fprintf(w, "  next: %s\n", st.Describe())
	}
	for _, line := range reports.StateAt(events, nodes, r.sc.Clients, now) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if r.o.Stdin == nil {
		return
	}
	prompt := "  [Enter] to go on"
	var timeout <-chan time.Time
	if when, what := reports.NextExpiry(events, nodes, now); when > 0 {
		left := time.Duration(when-now) - stepMargin
		if left < 0 {
			left = 0
		}
		prompt += fmt.Sprintf(" (goes on by itself in %s, before %s runs out: the servers' clocks do not stop)", left.Round(100*time.Millisecond), what)
		timeout = time.After(left)
	}
	fmt.Fprintf(w, "%s ", prompt)
	line := make(chan error, 1)
	go func() { line <- readLine(r.o.Stdin) }()
	select {
	case err := <-line:
		if err != nil {
			fmt.Fprintln(w, "(no input: going on)")
		} else {
			fmt.Fprintln(w)
		}
	case <-timeout:
		fmt.Fprintln(w, "(going on)")
	case <-ctx.Done():
		fmt.Fprintln(w)
	}
}

// readLine reads up to a newline a byte at a time, so that nothing after
// the line is consumed from the reader: the next step reads the next line.
func readLine(in io.Reader) error {
	var b [1]byte
	var got strings.Builder
	for {
		n, err := in.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				return nil
			}
			got.WriteByte(b[0])
		}
		if err != nil {
			return err
		}
	}
}
