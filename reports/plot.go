// plot.go draws a sweep's violation rates with gonum/plot, as PNG and SVG:
// one line per lock, each with its 95% interval as a shaded band, and a
// dashed line for the fenced variants, so that "the lock failed" and "the
// data survived" can be read side by side.

package reports

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a rate plot.
type Series struct {
	// Name is the legend's label ("redis", "redlock+fenced").
	Name string
	// X and Y are the points; Low and High bound Y's interval (the band).
	X, Y, Low, High []float64
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

// WriteRatePlot writes base+".png" and base+".svg".
func WriteRatePlot(rp RatePlot, base string) error {
	p := plot.New()
	p.Title.Text = rp.Title
	p.X.Label.Text = rp.XLabel
	p.Y.Label.Text = rp.YLabel
	p.Y.Min, p.Y.Max = -2, 102
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(24)
	for i, s := range rp.Series {
		c := plotutil.Color(i)
		if len(s.X) == 0 {
			continue
		}
		// The band: the upper bound left to right, the lower right to left.
		band := make(plotter.XYs, 0, 2*len(s.X))
		for j := range s.X {
			band = append(band, plotter.XY{X: s.X[j], Y: s.High[j]})
		}
		for j := len(s.X) - 1; j >= 0; j-- {
			band = append(band, plotter.XY{X: s.X[j], Y: s.Low[j]})
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return err
		}
		r, g, b, _ := c.RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 40}
		poly.LineStyle.Width = 0
		p.Add(poly)
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		line, marks, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, marks.Color = c, c
		line.Width = vg.Points(1.8)
		marks.Shape = plotutil.Shape(i)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(line, marks)
		p.Legend.Add(s.Name, line, marks)
	}
	if rp.Mark > 0 {
		rule, err := plotter.NewLine(plotter.XYs{{X: rp.Mark, Y: -2}, {X: rp.Mark, Y: 102}})
		if err != nil {
			return err
		}
		rule.Color = color.Gray{Y: 100}
		rule.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(rule)
		if rp.MarkLabel != "" {
			labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: rp.Mark, Y: 96}}, Labels: []string{" " + rp.MarkLabel}})
			if err != nil {
				return err
			}
			labels.TextStyle[0].Color = color.Gray{Y: 80}
			labels.TextStyle[0].XAlign = draw.XLeft
			p.Add(labels)
		}
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(8*vg.Inch, 5*vg.Inch, base+ext); err != nil {
			return fmt.Errorf("plot %s: %v", filepath.Base(base+ext), err)
		}
	}
	return nil
}

// IsFenced says whether a lock name names a fenced variant.
func IsFenced(name string) bool { return strings.HasSuffix(name, "+fenced") }
