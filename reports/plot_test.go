package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/outdir"
)

// TestNiceTicks: the x axis of a sweep over 0.2..3 TTLs gets labels every
// 0.5 (not three), each a round number, in range and in order.
func TestNiceTicks(t *testing.T) {
	var labels []string
	prev := -1.0
	for _, tk := range niceTicks(0.2, 3) {
		if tk.Value < 0.2-1e-9 || tk.Value > 3+1e-9 || tk.Value <= prev {
			t.Fatalf("tick %v out of range or order", tk.Value)
		}
		prev = tk.Value
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"0.5", "1", "1.5", "2", "2.5", "3"}
	if len(labels) != len(want) {
		t.Fatalf("labels %v, want %v", labels, want)
	}
	for i := range want {
		if labels[i] != want[i] {
			t.Fatalf("labels %v, want %v", labels, want)
		}
	}
}

// TestWriteRatePlot draws both files.
func TestWriteRatePlot(t *testing.T) {
	d, base := claimTemp(t), "damage"
	rp := RatePlot{Title: "gen-pause: trials with damage against the pause", XLabel: "pause / TTL", YLabel: "%",
		Mark: 1, MarkLabel: "pause = TTL",
		Series: []Series{{Name: "redis", X: []float64{0.5, 1, 2}, Y: []float64{0, 50, 100}, Low: []float64{0, 30, 80}, High: []float64{20, 70, 100}}}}
	if err := WriteRatePlot(rp, d, base); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".png", ".svg"} {
		if fi, err := os.Stat(filepath.Join(d.Path(), base+ext)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", ext, err)
		}
	}
}

// TestRunsBreakAtNoData: a point without data between two with data
// breaks the line; one before the first or after the last does not.
func TestRunsBreakAtNoData(t *testing.T) {
	for _, c := range []struct {
		x, gaps []float64
		want    string
	}{
		{[]float64{1, 2, 3}, nil, "[[0 1 2]]"},
		{[]float64{1, 3, 4}, []float64{2}, "[[0] [1 2]]"},
		{[]float64{1, 2}, []float64{3, 4}, "[[0 1]]"},
		{[]float64{2, 4}, []float64{1, 3, 5}, "[[0] [1]]"},
		{nil, []float64{1}, "[]"},
	} {
		if got := fmt.Sprint(runs(Series{X: c.x, NoData: c.gaps})); got != c.want {
			t.Errorf("runs(x %v, no data at %v) = %s, want %s", c.x, c.gaps, got, c.want)
		}
	}
}

// TestWriteRatePlotNoData: a plot with points without data, including a
// series with no data at all, is drawn and says so in its legend.
func TestWriteRatePlotNoData(t *testing.T) {
	d, base := claimTemp(t), "violations"
	rp := RatePlot{Title: "gen-pause", XLabel: "pause / TTL", YLabel: "%",
		Series: []Series{
			{Name: "redis", X: []float64{0.5, 2}, Y: []float64{0, 100}, Low: []float64{0, 80}, High: []float64{20, 100}, NoData: []float64{1, 3}},
			{Name: "redlock", NoData: []float64{0.5, 1, 2, 3}},
		}}
	if err := WriteRatePlot(rp, d, base); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(d.Path(), base+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no decided trial: no data", "redlock: no decided trial"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the plot's SVG lacks the legend entry %q", want)
		}
	}
}

// claimTemp claims a temp dir for a test's outputs.
func claimTemp(t *testing.T) *outdir.Dir {
	t.Helper()
	d, err := outdir.Claim(t.TempDir(), outdir.Sweep, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
