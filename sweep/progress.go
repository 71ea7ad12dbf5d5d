package sweep

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress shows how far a long sweep has got and how long it has left:
// a bar redrawn in place on a terminal (schollz/progressbar), plain lines
// every Every otherwise (CI logs, where carriage returns make a mess).
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
	prefix string
	// bar is the terminal's bar, from Start to Done (nil off a terminal).
	bar *progressbar.ProgressBar
	// ended says the bar has ended its line (finished, or Done).
	ended bool
	// what is where the sweep is, as the bar says it.
	what string
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
	p.bar, p.ended, p.what = nil, false, ""
	if p.tty && total > 0 {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.prefix),
			progressbar.OptionSetWidth(24),
			progressbar.OptionSetTheme(progressbar.Theme{Saucer: "#", SaucerPadding: ".", BarStart: "[", BarEnd: "]"}),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			// The bar's line ends when it fills (or at Done, when it
			// does not), so what follows starts on a line of its own.
			progressbar.OptionOnCompletion(func() {
				fmt.Fprintln(p.w)
				p.ended = true
			}),
		)
	}
}

// Step counts one trial done; what says where the sweep is.
func (p *Progress) Step(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	now := p.now()
	if p.bar != nil {
		// The bar draws when the count moves; what changes only with the
		// point or the lock.
		if what != p.what {
			p.what = what
			p.bar.Describe(p.prefix + " " + what)
		}
		p.bar.Add(1)
		return
	}
	if p.tty {
		return
	}
	if now.Sub(p.last) >= p.every || p.done == p.total {
		p.last = now
		fmt.Fprintln(p.w, p.line(what, now))
	}
}

// line is "sweep 45/300 trials (15%) redis pause=1.2ttl, 12s, about 1m8s left".
func (p *Progress) line(what string, now time.Time) string {
	frac := float64(p.done) / float64(max(p.total, 1))
	elapsed := now.Sub(p.start)
	left := "estimating"
	if p.done > 0 {
		left = "about " + (time.Duration(float64(elapsed)/frac) - elapsed).Round(time.Second).String() + " left"
	}
	return fmt.Sprintf("%s %d/%d trials (%d%%) %s, %s, %s", p.prefix, p.done, p.total, int(100*frac), what, elapsed.Round(time.Second), left)
}

// Done ends the bar's line (a sweep cut short leaves the bar where it got
// to).
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && !p.ended {
		p.bar.Exit() // its completion ends the line
	}
	p.bar = nil
}
