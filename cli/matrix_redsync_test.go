package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixRedsync runs Redlock stories against the real library redsync
// (github.com/go-redsync/redsync) on real servers, through sim matrix:
// the clock jump, the crash-restart and the pause after acquire break it
// as they break Redlock, and check-and-set storage saves it. Every cell
// is judged against locksim's redlock played on the same story: as good
// as it, with the story's counterfactual flipped.
func TestMatrixRedsync(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	stories := []string{"redlock-clock-jump", "redlock-crash-restart", "redlock-pause-after-acquire", "redlock-token-cas"}
	var out, errb string
	for attempt := 1; ; attempt++ {
		dir := filepath.Join(t.TempDir(), "matrix")
		var code int
		code, out, errb = sim(t, append([]string{"matrix", "--locks", "redsync", "--out", dir, "-q"}, stories...)...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		// A cell the timing guard left unknown is played again (at most
		// twice more), as TestCatalogue does.
		if attempt == 3 || !strings.Contains(out, "machine too slow") {
			break
		}
		t.Logf("attempt %d had a cell the machine was too slow for; again", attempt)
	}
	want := "4 cell(s): 4 as expected"
	if !strings.Contains(out, want) {
		t.Fatalf("want %q in the table:\n%s", want, out)
	}
	for _, s := range stories {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, s+" ") {
				line = l
			}
		}
		if !strings.Contains(line, "as good as the reference redlock") || !strings.Contains(line, "cf ") || strings.Contains(line, "no flip") {
			t.Errorf("%s: %q, want as good as redlock and a flipped counterfactual", s, line)
		}
	}
}
