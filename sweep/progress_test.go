package sweep

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressPlainLines: off a terminal the progress display prints
// plain lines (no carriage return, no escape), the last with the total,
// each with an estimate of the time left.
func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, "sweep x")
	clock := time.Unix(0, 0)
	p.now = func() time.Time { clock = clock.Add(4 * time.Second); return clock }
	p.Start(5)
	for i := 0; i < 5; i++ {
		p.Step("redis pause=1ttl")
	}
	p.Done()
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.ContainsAny(out, "\r\033") || len(lines) != 2 {
		t.Fatalf("want 2 plain lines (one after 10s, and the last), got %q", out)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "sweep x 5/5 trials (100%) redis pause=1ttl") || !strings.Contains(last, "left") {
		t.Fatalf("last line %q", last)
	}
}

// TestProgressBarOnTerminal: on a terminal the bar (schollz/progressbar)
// is redrawn in place with the count and what the sweep is at, and its
// line is ended once, when it fills or at Done.
func TestProgressBarOnTerminal(t *testing.T) {
	for _, n := range []int{3, 2} { // filled, cut short
		var b bytes.Buffer
		p := NewProgress(&b, "sweep x")
		p.tty = true
		p.Start(3)
		for i := 0; i < n; i++ {
			p.Step("redis pause=1ttl")
		}
		p.Done()
		out := b.String()
		want := []string{"\r", "sweep x", "(0/3)"} // drawn at once; the next draws wait 100ms
		if n == 3 {
			want = append(want, "sweep x redis pause=1ttl", "[########################]", "(3/3)")
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%d of 3: bar output %q lacks %q", n, out, w)
			}
		}
		if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
			t.Errorf("%d of 3: the bar's line must end once: %q", n, out)
		}
	}
}
