// workshop.go is workshop mode (`sim run NAME --step`) on the runner's
// step hook: before each step of a scripted story it says what the step
// will do, shows who holds the lock on which node and what each client
// believes (derived from the history so far), and waits for Enter; it goes
// on by itself reports.StepMargin before a lease would run out. It is the
// terminal fallback of `sim workshop`'s page (package web).

package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
)

// workshop shows the steps on log and waits for Enter on stdin, through
// one reader that lives as long as the command: a step that went on by
// itself leaves no read behind to take the next Enter.
type workshop struct {
	log io.Writer
	// lines yields one value for each line read from stdin, and is
	// closed at its end; nil when there is no stdin to wait on.
	lines <-chan struct{}
}

// newWorkshop starts the reader of stdin (when not nil). stop lets it end
// once its read under way returns (stdin's end, for a terminal).
func newWorkshop(log io.Writer, stdin io.Reader) (w *workshop, stop func()) {
	if log == nil {
		log = io.Discard
	}
	w = &workshop{log: log}
	if stdin == nil {
		return w, func() {}
	}
	done := make(chan struct{})
	w.lines = readLines(stdin, done)
	return w, func() { close(done) }
}

// readLines reads stdin line by line on its own goroutine, handing on one
// value per line, until stdin ends or done is closed.
func readLines(in io.Reader, done <-chan struct{}) <-chan struct{} {
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		for readLine(in) == nil {
			select {
			case lines <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	return lines
}

// readLine reads up to a newline a byte at a time, so that nothing after
// the line is consumed from the reader.
func readLine(in io.Reader) error {
	var b [1]byte
	for {
		n, err := in.Read(b[:])
		if n == 1 && b[0] == '\n' {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// beforeStep shows step v and waits for Enter (runner.Options.BeforeStep).
func (w *workshop) beforeStep(ctx context.Context, v runner.StepView) {
	nodes := reports.LockNodes(v.Scenario)
	// No step number of the harness's own: a story's narration numbers
	// its steps as its source does (Kleppmann's 1. to 4.).
	fmt.Fprintf(w.log, "\n── t=%.3fs ──────────────────────────────────────\n", float64(v.Now)/1e9)
	if v.Step.Say != "" {
		fmt.Fprintf(w.log, "  %s\n", v.Step.Say)
	}
	if v.Step.Do != "say" {
		fmt.Fprintf(w.log, "  next: %s\n", v.Step.Describe())
	}
	for _, line := range reports.StateAt(v.Events, nodes, v.Scenario.Clients, v.Now) {
		fmt.Fprintf(w.log, "  %s\n", line)
	}
	if w.lines == nil {
		return
	}
	prompt := "  [Enter] to go on"
	var timeout <-chan time.Time
	if left, what, ok := reports.StepWait(v.Events, nodes, v.Now); ok {
		prompt += fmt.Sprintf(" (goes on by itself in %s, before %s runs out: the servers' clocks do not stop)", left.Round(100*time.Millisecond), what)
		timeout = time.After(left)
	}
	fmt.Fprintf(w.log, "%s ", prompt)
	fmt.Fprintln(w.log, w.wait(ctx, timeout))
}

// wait waits for a line of stdin, the timeout or ctx's end, and says
// which ended it ("" for a line or ctx).
func (w *workshop) wait(ctx context.Context, timeout <-chan time.Time) string {
	select {
	case _, ok := <-w.lines:
		if !ok {
			return "(no input: going on)"
		}
		return ""
	case <-timeout:
		return "(going on)"
	case <-ctx.Done():
		return ""
	}
}
