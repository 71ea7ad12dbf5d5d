package reports

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/sweep"
)

// TestSweepPlots: a sweep's rows become two plots, a line per lock (the
// fenced one dashed) with its interval, a point every trial of which was
// unknown a no-data mark; WriteSweep writes sweep.csv and both plots, and
// the table says "no data" for that point.
func TestSweepPlots(t *testing.T) {
	at := func(lock string, x float64) sweep.Row {
		return sweep.Row{Lock: lock, Param: "pause", Value: sweep.Value{X: x, RelTTL: true}, TTL: 100 * time.Millisecond,
			Resolved: time.Duration(x * float64(100*time.Millisecond)), Trials: 10}
	}
	rows := []sweep.Row{at("redis", 0.5), at("redis", 2), at("redis+fenced", 0.5), at("redis+fenced", 2)}
	rows[0].Violated = 1
	rows[1].Violated, rows[1].Damaged = 8, 6
	rows[3].Unknown = 10
	plots := SweepPlots("gen-pause", rows, XPlanned)
	if len(plots) != 2 || plots[0].File != "damage" || plots[1].File != "violations" {
		t.Fatalf("plots %+v", plots)
	}
	damage := plots[0]
	if damage.Title != "gen-pause: damage to the protected data against the pause" || damage.XLabel != "pause / TTL" || damage.Mark != 1 {
		t.Errorf("damage plot: title %q, x %q, mark %v", damage.Title, damage.XLabel, damage.Mark)
	}
	if len(damage.Series) != 2 || damage.Series[0].Dashed || !damage.Series[1].Dashed {
		t.Fatalf("series %+v", damage.Series)
	}
	redis, fenced := damage.Series[0], damage.Series[1]
	if len(redis.Y) != 2 || redis.Y[1] != 60 || redis.Low[1] >= 60 || redis.High[1] <= 60 {
		t.Errorf("redis: %+v", redis)
	}
	if len(fenced.X) != 1 || len(fenced.NoData) != 1 || fenced.NoData[0] != 2 {
		t.Errorf("redis+fenced, every trial at 2 TTLs unknown: %+v", fenced)
	}
	if v := plots[1].Series[0]; v.Y[0] != 10 {
		t.Errorf("violations of redis at 0.5 TTL: %v%%, want 10", v.Y[0])
	}
	// Against the sizes measured: redis at 2 TTLs struck 2.1, 2.3 and 2.2
	// TTLs (median 2.2); at 0.5 none was measured, so it stays at 0.5.
	nan := math.NaN()
	for _, struck := range []float64{2.1, 2.3, 2.2} {
		rows[1].Each = append(rows[1].Each, sweep.Trial{Measured: sweep.Measured{Planned: 2, Struck: struck, Lead: nan, Overrun: nan}})
	}
	measured := SweepPlots("gen-pause", rows, XMeasured)[0]
	if x := measured.Series[0].X; len(x) != 2 || x[0] != 0.5 || math.Abs(x[1]-2.2) > 1e-9 || !strings.Contains(measured.XLabel, "as struck") {
		t.Errorf("redis against the measured pause: x %v, label %q; want 0.5 and 2.2", x, measured.XLabel)
	}

	d := claimTemp(t)
	dir := d.Path()
	if err := WriteSweep(d, "gen-pause", rows, XPlanned); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.csv", "damage.png", "damage.svg", "violations.png", "violations.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("no %s", f)
		}
	}
	var table bytes.Buffer
	SweepTable(&table, rows)
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 5 || !strings.Contains(lines[4], "no data") || !strings.Contains(lines[2], "6/10") {
		t.Errorf("table:\n%s", table.String())
	}
}
