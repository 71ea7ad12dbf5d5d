// progress.go: the progress bar of the long commands (sim findings).
package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress counts the steps of a long command on stderr: one line that
// redraws itself on a terminal, a line per step elsewhere (a CI log).
type progress struct {
	w        io.Writer
	tty      bool
	n, total int
	started  time.Time
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, total: max(total, 1), started: time.Now()}
}

// line is the bar after n of total steps, with what was last done.
func (p *progress) line(what string) string {
	const width = 24
	full := width * p.n / p.total
	return fmt.Sprintf("[%s%s] %d/%d %s %s", strings.Repeat("#", full), strings.Repeat(".", width-full), p.n, p.total,
		time.Since(p.started).Round(time.Second), what)
}

// step counts one step done and shows it.
func (p *progress) step(what string) {
	p.n++
	p.say(what)
}

// say shows what is being done, without counting a step.
func (p *progress) say(what string) {
	if !p.tty {
		fmt.Fprintln(p.w, p.line(what))
		return
	}
	l := p.line(what)
	if r := []rune(l); len(r) > 110 {
		l = string(r[:109]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", l)
}

// done ends the bar's line on a terminal.
func (p *progress) done() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
