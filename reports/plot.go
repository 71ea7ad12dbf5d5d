// plot.go draws a sweep's violation rates with gonum/plot, as PNG and SVG:
// one line per lock, each with its 95% interval as a shaded band, and a
// dashed line for the fenced variants, so that "the lock failed" and "the
// data survived" can be read side by side.

package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locksim/locksim/outdir"
)

// Series is one line of a rate plot.
type Series struct {
	// Name is the legend's label ("redis", "redlock+fenced").
	Name string
	// X and Y are the points; Low and High bound Y's interval (its error
	// bar).
	X, Y, Low, High []float64
	// NoData are the x values at which the series has no rate (every
	// trial unknown): the line and band break there, and an open ring on
	// the x axis marks the point, which a legend entry explains.
	NoData []float64
	// Dashed draws the line dashed (the fenced variants).
	Dashed bool
}

// RatePlot is a rate plot's content.
type RatePlot struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Mark, when positive, draws a vertical rule at that x (e.g. pause =
	// TTL), labelled MarkLabel.
	Mark      float64
	MarkLabel string
}

// WriteRatePlot writes name+".png" and name+".svg" into d.
func WriteRatePlot(rp RatePlot, d *outdir.Dir, name string) error {
	p, err := ratePlot(rp)
	if err != nil {
		return err
	}
	for _, ext := range []string{".png", ".svg"} {
		b, err := render(p, ext[1:])
		if err == nil {
			err = d.WriteFile(name+ext, b)
		}
		if err != nil {
			return fmt.Errorf("plot %s: %v", name+ext, err)
		}
	}
	return nil
}

// RatePlotSVG is the rate plot as WriteRatePlot's .svg draws it (sim
// workshop's sweep page).
func RatePlotSVG(rp RatePlot) ([]byte, error) {
	p, err := ratePlot(rp)
	if err != nil {
		return nil, err
	}
	return render(p, "svg")
}

// legendWidth is the least room right of a plot that its legend takes.
const legendWidth = 2.4 * vg.Inch

// render draws p in format (png, svg) at the size of the sweep's plots,
// its legend outside the plot, on the right, where it covers no line.
func render(p *plot.Plot, format string) ([]byte, error) {
	return renderSized(p, format, 9.8*vg.Inch, 5*vg.Inch)
}

// renderSized is render at w by h.
func renderSized(p *plot.Plot, format string, w, h vg.Length) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	legend := p.Legend
	// The legend's room: legendWidth, or its widest entry's when wider,
	// so that no entry runs off the image.
	room := legendWidth
	if r := legend.Rectangle(dc); r.Max.X-r.Min.X+vg.Points(16) > room {
		room = r.Max.X - r.Min.X + vg.Points(16)
	}
	p.Legend = plot.NewLegend()
	drawPlot(p, draw.Crop(dc, 0, -room, 0, 0))
	p.Legend = legend
	legend.YOffs = -p.Title.Padding - p.Title.TextStyle.Height(p.Title.Text) - vg.Points(14)
	legend.Draw(draw.Crop(dc, w-room+vg.Points(8), 0, 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// drawPlot draws p on c with its X axis label centred under the data
// area by hand: gonum places the label's glyph box at the data midpoint,
// which on a log axis lies far right of the middle, and then narrows
// the data area until that box fits (the cost chart's plot ended 1.7 in
// short of its legend).
func drawPlot(p *plot.Plot, c draw.Canvas) {
	label := p.X.Label
	if label.Text == "" {
		p.Draw(c)
		return
	}
	p.X.Label.Text = ""
	defer func() { p.X.Label = label }()
	strip := label.TextStyle.Height(label.Text) + label.Padding
	above := draw.Crop(c, 0, 0, strip, 0)
	p.Draw(above)
	data := p.DataCanvas(above)
	at := vg.Point{X: (data.Min.X + data.Max.X) / 2, Y: c.Min.Y + label.TextStyle.FontExtents().Descent}
	c.FillText(label.TextStyle, at, label.Text)
}

// ratePlot builds the rate plot rp.
func ratePlot(rp RatePlot) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = rp.Title
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = rp.XLabel
	p.Y.Label.Text = rp.YLabel
	// The rates run from 0 to 100%; the legend sits outside the plot
	// (render), so the axis needs only room for the mark's label.
	p.Y.Tick.Marker = plot.ConstantTicks(percentTicks())
	p.X.Tick.Marker = plot.TickerFunc(niceTicks)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Y.Min, p.Y.Max = -3, 108
	// Lines that coincide (four locks on the 0% line) are told apart by
	// their markers and by a small offset along x, each its own; each
	// point's 95% interval is an error bar at the same offset, so that
	// no interval covers another.
	offset := seriesOffsets(rp.Series)
	for i, s := range rp.Series {
		c := plotutil.Color(i)
		if len(s.X) == 0 {
			continue
		}
		var line *plotter.Line
		var marks *plotter.Scatter
		for _, run := range runs(s) {
			pts := make(plotter.XYs, len(run))
			errs := make(plotter.YErrors, len(run))
			for k, j := range run {
				pts[k] = plotter.XY{X: s.X[j] + offset[i], Y: s.Y[j]}
				errs[k].Low, errs[k].High = s.Y[j]-s.Low[j], s.High[j]-s.Y[j]
			}
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{pts, errs})
			if err != nil {
				return nil, err
			}
			r, g, b, _ := c.RGBA()
			bars.LineStyle.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 150}
			bars.LineStyle.Width = vg.Points(1.2)
			bars.CapWidth = vg.Points(5)
			p.Add(bars)
			if line, marks, err = plotter.NewLinePoints(pts); err != nil {
				return nil, err
			}
			line.Color, marks.Color = c, c
			line.Width = vg.Points(1.8)
			marks.Shape = plotutil.Shape(i)
			marks.Radius = vg.Points(3.5)
			if s.Dashed {
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			p.Add(line, marks)
		}
		if line != nil {
			p.Legend.Add(s.Name, line, marks)
		}
	}
	// The points without data: an open ring on the x axis, in the
	// series' colour, and one legend entry saying what a ring means.
	var ring *plotter.Scatter
	for i, s := range rp.Series {
		if len(s.NoData) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.NoData))
		for j, x := range s.NoData {
			pts[j] = plotter.XY{X: x, Y: 0}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Shape = draw.RingGlyph{}
		sc.Color = plotutil.Color(i)
		sc.Radius = vg.Points(5)
		p.Add(sc)
		ring = sc
		if len(s.X) == 0 {
			p.Legend.Add(s.Name+": no decided trial", sc)
		}
	}
	if ring != nil {
		legend := *ring
		legend.Color = color.Gray{Y: 60}
		p.Legend.Add("no decided trial: no data", &legend)
	}
	if rp.Mark > 0 {
		rule, err := plotter.NewLine(plotter.XYs{{X: rp.Mark, Y: -2}, {X: rp.Mark, Y: 100}})
		if err != nil {
			return nil, err
		}
		rule.Color = color.Gray{Y: 40}
		rule.Width = vg.Points(1.5)
		rule.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(rule)
		if rp.MarkLabel != "" {
			labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: rp.Mark, Y: 101}}, Labels: []string{rp.MarkLabel}})
			if err != nil {
				return nil, err
			}
			labels.TextStyle[0].Color = color.Gray{Y: 40}
			labels.TextStyle[0].XAlign = draw.XCenter
			labels.TextStyle[0].YAlign = draw.YBottom
			p.Add(labels)
		}
	}
	return p, nil
}

// runs splits a series' points (indexes into X, in order) where a point
// without data lies between two with data: the line does not join them,
// as if the rate there were known.
func runs(s Series) [][]int {
	var out [][]int
	var cur []int
	for j, x := range s.X {
		if j > 0 && slices.ContainsFunc(s.NoData, func(g float64) bool { return g > s.X[j-1] && g < x }) {
			out, cur = append(out, cur), nil
		}
		cur = append(cur, j)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// seriesOffsets are the x offsets of each series, centred on the true
// x: 1% of the x range between neighbours, so that lines that coincide
// lie side by side and none hides another.
func seriesOffsets(series []Series) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, x := range append(append([]float64(nil), s.X...), s.NoData...) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	out := make([]float64, len(series))
	if hi <= lo {
		return out
	}
	for i := range out {
		out[i] = (float64(i) - float64(len(series)-1)/2) * 0.01 * (hi - lo)
	}
	return out
}

// percentTicks labels 0 to 100% every 25.
func percentTicks() []plot.Tick {
	var ts []plot.Tick
	for v := 0; v <= 100; v += 5 {
		t := plot.Tick{Value: float64(v)}
		if v%25 == 0 {
			t.Label = fmt.Sprint(v)
		}
		ts = append(ts, t)
	}
	return ts
}

// niceTicks labels the x axis every 1, 2 or 5 times a power of ten, with
// 4 to 10 labels, and a minor tick between two labels.
func niceTicks(min, max float64) []plot.Tick {
	span := max - min
	if span <= 0 {
		return []plot.Tick{{Value: min, Label: fmt.Sprintf("%g", min)}}
	}
	step := math.Pow(10, math.Floor(math.Log10(span)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10} {
		if span/(step*m) <= 10 {
			step *= m
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(min/step*2) * step / 2; v <= max+step*1e-9; v += step / 2 {
		v := math.Round(v/step*2) * step / 2
		t := plot.Tick{Value: v}
		if math.Abs(math.Remainder(v, step)) < step*1e-6 {
			t.Label = strconv.FormatFloat(v, 'g', 4, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// IsFenced says whether a lock name names a fenced variant.
func IsFenced(name string) bool { return strings.HasSuffix(name, "+fenced") }
