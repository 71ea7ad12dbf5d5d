package cli

import "testing"

// TestLoadWatch: the watch reads /proc/loadavg, keeps the highest figure
// seen (a lower reading does not lower it), and stops.
func TestLoadWatch(t *testing.T) {
	l, ok := loadAverage()
	if !ok || l < 0 {
		t.Fatalf("loadAverage %v, %v", l, ok)
	}
	w := &loadWatch{max: 1000}
	w.sample()
	if w.max != 1000 {
		t.Errorf("a reading of %v lowered the highest seen to %v", l, w.max)
	}
	if got := watchLoad().stop(); got < 0 {
		t.Errorf("watch's highest load %v", got)
	}
}
