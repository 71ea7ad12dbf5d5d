package sweep

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress shows how far a long sweep has got and how long it has left:
// a bar redrawn in place on a terminal, plain lines every Every otherwise
// (CI logs, where carriage returns make a mess).
type Progress struct {
	w     io.Writer
	tty   bool
	every time.Duration

	mu     sync.Mutex
	total  int
	done   int
	start  time.Time
	last   time.Time
	now    func() time.Time
	drawn  bool
	prefix string
}

// NewProgress writes to w, as a bar when w is a terminal.
func NewProgress(w io.Writer, prefix string) *Progress {
	return &Progress{w: w, tty: isTerminal(w), every: 10 * time.Second, now: time.Now, prefix: prefix}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Start sets the number of trials to come.
func (p *Progress) Start(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done, p.start, p.last = total, 0, p.now(), p.now()
}

// Step counts one trial done; what says where the sweep is.
func (p *Progress) Step(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	now := p.now()
	if p.tty {
		if now.Sub(p.last) < 100*time.Millisecond && p.done < p.total {
			return
		}
		p.last = now
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(what, now, true))
		p.drawn = true
		return
	}
	if now.Sub(p.last) >= p.every || p.done == p.total {
		p.last = now
		fmt.Fprintln(p.w, p.line(what, now, false))
	}
}

// line is "sweep [#####.....] 45/300 15% redis pause=1.2ttl, 12s, about 1m8s left".
func (p *Progress) line(what string, now time.Time, bar bool) string {
	frac := float64(p.done) / float64(max(p.total, 1))
	elapsed := now.Sub(p.start)
	left := "estimating"
	if p.done > 0 {
		left = "about " + (time.Duration(float64(elapsed)/frac) - elapsed).Round(time.Second).String() + " left"
	}
	var b strings.Builder
	b.WriteString(p.prefix)
	if bar {
		const width = 24
		n := int(frac * width)
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", n), strings.Repeat(".", width-n))
	}
	fmt.Fprintf(&b, " %d/%d trials (%d%%) %s, %s, %s", p.done, p.total, int(100*frac), what, elapsed.Round(time.Second), left)
	return b.String()
}

// Done ends the bar's line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
