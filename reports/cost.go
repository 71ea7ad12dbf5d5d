// cost.go draws sim cost's figures: the table on stdout, and cost.png,
// price against safety in one picture. x is the price (each critical
// section's p99, or the locks per second of contending clients), y the
// catalogue's faults, and each mark a verdict under a fault at the
// option and defence it was told or played with.

package reports

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/cost"
	"github.com/locksim/locksim/outdir"
)

// CostX is the cost chart's x axis.
type CostX string

const (
	// CostP99 is the p99 of one critical section with the defence (for
	// the watchdog, the plain section's: it renews beside it).
	CostP99 CostX = "p99"
	// CostRate is the locks per second of contending clients on one lock.
	CostRate CostX = "rate"
)

// CostTable writes the figures in words: the floors, then a line per
// option.
func CostTable(w io.Writer, r *cost.Result) {
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) }
	fmt.Fprintf(w, "floors (one round trip, p50 / p99 in µs):")
	for _, f := range r.Floors {
		fmt.Fprintf(w, "  %s %s / %s", f.Name, us(f.P50), us(f.P99))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "option\tacquire+release p50/p99 µs\tx floor p50/p99\tlocks/s: 1 lock\t4 locks\tsection µs p50\t+fenced\t+token-cas\t+lease check\twatchdog renewal")
	for _, row := range r.Rows {
		if row.AcquireRelease.Samples == 0 {
			fmt.Fprintf(tw, "%s\tnot measured: %s\n", row.Key, row.Err)
			continue
		}
		extra := func(d string) string {
			if _, ok := row.Defences[d]; !ok {
				return "-"
			}
			e := row.Extra(d)
			s := us(e)
			if e >= 0 && d != cost.DefenceWatchdog {
				s = "+" + s
			}
			return s
		}
		sec := "-"
		if l, ok := row.Defences[cost.DefenceNone]; ok {
			sec = us(l.P50)
		}
		fmt.Fprintf(tw, "%s\t%s / %s\t%.1f / %.1f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\n", row.Key,
			us(row.AcquireRelease.P50), us(row.AcquireRelease.P99), row.RatioP50, row.RatioP99,
			row.OneLock.PerSec, row.FourLocks.PerSec, sec,
			extra(cost.DefenceFenced), extra(cost.DefenceTokenCAS), extra(cost.DefenceLeaseCheck), extra(cost.DefenceWatchdog))
		if row.Err != "" {
			fmt.Fprintf(tw, "\t(cut short: %s)\n", row.Err)
		}
	}
	tw.Flush()
}

// costColor is a verdict's colour on the chart.
func costColor(v checker.Verdict) color.Color {
	switch v {
	case checker.Unsafe:
		return color.NRGBA{R: 200, G: 30, B: 30, A: 255}
	case checker.Leaked:
		return color.NRGBA{R: 230, G: 140, B: 0, A: 255}
	case checker.Hung:
		return color.NRGBA{R: 120, G: 60, B: 170, A: 255}
	}
	return color.NRGBA{R: 20, G: 140, B: 60, A: 255}
}

// costShape is a defence's glyph on the chart.
func costShape(d string) draw.GlyphDrawer {
	switch d {
	case cost.DefenceFenced:
		return draw.BoxGlyph{}
	case cost.DefenceTokenCAS:
		return draw.TriangleGlyph{}
	case cost.DefenceLeaseCheck:
		return draw.PyramidGlyph{}
	case cost.DefenceWatchdog:
		return draw.CrossGlyph{}
	}
	return draw.CircleGlyph{}
}

// costX is where a defence of a row lies on axis x (0: nowhere).
func costX(row cost.Row, d string, x CostX) float64 {
	if x == CostRate {
		return row.OneLock.PerSec
	}
	l, ok := row.Defences[d]
	if d == cost.DefenceWatchdog {
		l, ok = row.Defences[cost.DefenceNone]
	}
	if !ok {
		return 0
	}
	return float64(l.P99) / 1e3
}

// CostPNG draws cost.png: for each option and defence that a story
// marks, its verdict under each fault (the worst when several stories
// share one), at the option's price on axis x.
func CostPNG(r *cost.Result, x CostX) ([]byte, error) {
	rows := map[string]cost.Row{}
	for _, row := range r.Rows {
		rows[row.Key] = row
	}
	type cell struct{ option, defence, fault string }
	worst := map[cell]checker.Verdict{}
	var faults []string
	for _, m := range r.Marks {
		row, ok := rows[m.Option]
		if !ok || costX(row, m.Defence, x) <= 0 {
			continue
		}
		c := cell{m.Option, m.Defence, m.Fault}
		if v, seen := worst[c]; !seen || checker.Rank(m.Verdict) > checker.Rank(v) {
			worst[c] = m.Verdict
		}
		if !slices.Contains(faults, m.Fault) {
			faults = append(faults, m.Fault)
		}
	}
	sort.Slice(faults, func(i, j int) bool {
		if (faults[i] == cost.FaultNone) != (faults[j] == cost.FaultNone) {
			return faults[i] == cost.FaultNone
		}
		return faults[i] < faults[j]
	})
	p := plot.New()
	what := "p99 of one critical section (acquire, read, write, release), µs, one client"
	if x == CostRate {
		what = fmt.Sprintf("locks per second, %d clients contending for one lock", r.Contenders)
	}
	p.Title.Text = "What each lock costs, and which faults it survives\nmarks: " + r.Verdicts
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = what + " (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(logTicks)
	var ticks []plot.Tick
	for i, f := range faults {
		label := f
		if f == cost.FaultNone {
			label = "no fault (timing)"
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(len(faults))+0.6
	p.Add(plotter.NewGrid())
	if len(faults) == 0 {
		p.Title.Text += "\n(no story is marked at a measured option and defence)"
	}

	// The options measured, numbered from the cheapest; an option no
	// story marks has its number too, at its price.
	marked := map[string]bool{}
	for c := range worst {
		marked[c.option] = true
	}
	opts := costOptions(r, x)
	number := map[string]int{}
	for i, o := range opts {
		number[o] = i + 1
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for c, v := range worst {
		px := costX(rows[c.option], c.defence, x)
		lo, hi = math.Min(lo, px), math.Max(hi, px)
		py := float64(slices.Index(faults, c.fault)) + defenceOffset(c.defence)
		sc, err := plotter.NewScatter(plotter.XYs{{X: px, Y: py}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: costColor(v), Shape: costShape(c.defence), Radius: vg.Points(4)}
		p.Add(sc)
	}
	for _, o := range opts {
		px := costX(rows[o], cost.DefenceNone, x)
		lo, hi = math.Min(lo, px), math.Max(hi, px)
	}
	if len(opts) > 0 {
		p.X.Min, p.X.Max = lo/1.3, hi*1.3
	} else {
		p.X.Min, p.X.Max = 1, 10
	}
	// Each option's number above the top row, at its plain section's x,
	// staggered so that neighbours do not cover each other.
	var nums plotter.XYLabels
	for i, o := range opts {
		nums.XYs = append(nums.XYs, plotter.XY{X: costX(rows[o], cost.DefenceNone, x), Y: float64(len(faults)) - 0.45 + 0.35*float64(i%3)})
		nums.Labels = append(nums.Labels, strconv.Itoa(number[o]))
	}
	if len(opts) > 0 {
		labels, err := plotter.NewLabels(nums)
		if err != nil {
			return nil, err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign = draw.XCenter
		}
		p.Add(labels)
	}

	// The legend: verdicts by colour, defences by shape, options by number.
	p.Legend.Top, p.Legend.Left = true, true
	glyph := func(c color.Color, s draw.GlyphDrawer) plot.Thumbnailer {
		sc, _ := plotter.NewScatter(plotter.XYs{{}})
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Shape: s, Radius: vg.Points(4)}
		return sc
	}
	for _, v := range []checker.Verdict{checker.Safe, checker.Unsafe, checker.Leaked} {
		p.Legend.Add(string(v), glyph(costColor(v), draw.CircleGlyph{}))
	}
	for _, d := range cost.Defences {
		words := d
		if d == cost.DefenceNone {
			words = "no defence"
		}
		if d == cost.DefenceWatchdog {
			words = "watchdog (at its plain section)"
		}
		p.Legend.Add(words, glyph(color.Gray{Y: 60}, costShape(d)))
	}
	for _, o := range opts {
		words := fmt.Sprintf("%d  %s", number[o], o)
		if !marked[o] {
			words += " (no marks)"
		}
		p.Legend.Add(words)
	}
	return renderSized(p, "png", 11*vg.Inch, vg.Length(3.2+0.42*float64(max(len(faults), 4)))*vg.Inch)
}

// costOptions are the options of r measured at axis x, from the
// cheapest: the chart numbers them in this order.
func costOptions(r *cost.Result, x CostX) []string {
	at := map[string]float64{}
	var opts []string
	for _, row := range r.Rows {
		if px := costX(row, cost.DefenceNone, x); px > 0 && !slices.Contains(opts, row.Key) {
			opts = append(opts, row.Key)
			at[row.Key] = px
		}
	}
	sort.Slice(opts, func(i, j int) bool {
		if at[opts[i]] != at[opts[j]] {
			return at[opts[i]] < at[opts[j]]
		}
		return opts[i] < opts[j]
	})
	return opts
}

// defenceOffset moves a defence's marks within its fault's row, so that
// an option's defences, at nearly the same x, lie apart.
func defenceOffset(d string) float64 {
	i := slices.Index(cost.Defences, d)
	return (float64(i) - float64(len(cost.Defences)-1)/2) * 0.14
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten.
func logTicks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if min <= 0 || max <= min {
		return ts
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ts
}

// CostXAxis checks an --x value.
func CostXAxis(s string) (CostX, error) {
	switch CostX(strings.TrimSpace(s)) {
	case CostP99, "":
		return CostP99, nil
	case CostRate:
		return CostRate, nil
	}
	return "", fmt.Errorf("expected p99 or rate, got %q", s)
}

// WriteCost writes a sim cost run's files into d: cost.csv, cost.json
// and cost.png (its chart on axis x). sim cost and the workshop page's
// cost view both write them so.
func WriteCost(d *outdir.Dir, r *cost.Result, x CostX) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	png, err := CostPNG(r, x)
	if err != nil {
		return fmt.Errorf("cost.png: %v", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"cost.csv", r.CSV()}, {"cost.json", js}, {"cost.png", png}} {
		if err := d.WriteFile(f.name, f.data); err != nil {
			return err
		}
	}
	return nil
}
