// sweep.go writes what sim sweep (and sim sweep merge) leaves: sweep.csv,
// trials.csv, the damage and violation plots built from its rows, and the table on
// the terminal.

package reports

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/sweep"
)

// XAxis is what a sweep's plots put on their x axis.
type XAxis string

const (
	// XPlanned draws each point at the value swept (the default).
	XPlanned XAxis = "planned"
	// XMeasured draws each point at its trials' median fault size as
	// struck (sweep.Row.Spread), for a fault's size: on a loaded machine
	// the two part.
	XMeasured XAxis = "measured"
)

// WriteSweep writes a sweep's sweep.csv, trials.csv and its two plots
// (damage.png/.svg, violations.png/.svg, their x axis as x says) into d;
// scenario names the swept scenario in the plots' titles.
func WriteSweep(d *outdir.Dir, scenario string, rows []sweep.Row, x XAxis) error {
	for name, write := range map[string]func(io.Writer, []sweep.Row) error{"sweep.csv": sweep.WriteCSV, "trials.csv": sweep.WriteTrialsCSV} {
		f, err := d.Create(name)
		if err != nil {
			return err
		}
		if err := write(f, rows); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		return nil
	}
	for _, rp := range SweepPlots(scenario, rows, x) {
		if err := WriteRatePlot(rp.RatePlot, d, rp.File); err != nil {
			return err
		}
	}
	return nil
}

// SweepPlot is one of a sweep's plots and the file it goes to (without
// its extension).
type SweepPlot struct {
	File string
	RatePlot
}

// SweepPlots are a sweep's two plots, from its rows: the damage to the
// protected data and the violations of the lock or the data, each a line
// per lock (fenced ones dashed) with its 95% Wilson interval; a point
// every trial of which was unknown has no rate. With x XMeasured, a
// point sits at its trials' median fault size as struck (at its planned
// value where none was measured).
func SweepPlots(scenario string, rows []sweep.Row, x XAxis) []SweepPlot {
	key := rows[0].Param
	xlabel, mark, what := sweepAxis(key)
	at := sweep.Row.X
	if x == XMeasured {
		xlabel += " as struck (median of the trials)"
		at = func(r sweep.Row) float64 {
			if _, median, _ := r.Spread(); !math.IsNaN(median) {
				return median
			}
			return r.X()
		}
	}
	var out []SweepPlot
	for _, plot := range []struct {
		file, ylabel, title string
		k                   func(sweep.Row) (int, int)
	}{
		{"damage", "trials with a lost update or stale write (%)", "Damage to the protected data",
			func(r sweep.Row) (int, int) { return r.Damaged, r.Decided() }},
		{"violations", "trials where the lock or the data was violated (%)", "Lock or data violated",
			func(r sweep.Row) (int, int) { return r.Violated, r.Decided() }},
	} {
		rp := RatePlot{Title: fmt.Sprintf("%s: %s against %s", scenario, strings.ToLower(plot.title[:1])+plot.title[1:], what),
			XLabel: xlabel, YLabel: plot.ylabel, Mark: mark, MarkLabel: key + " = TTL"}
		index := map[string]int{}
		for _, r := range rows {
			i, ok := index[r.Lock]
			if !ok {
				i = len(rp.Series)
				index[r.Lock] = i
				rp.Series = append(rp.Series, Series{Name: r.Lock, Dashed: IsFenced(r.Lock)})
			}
			k, n := plot.k(r)
			s := &rp.Series[i]
			if r.NoData() {
				s.NoData = append(s.NoData, at(r)) // every trial unknown: no rate
				continue
			}
			lo, hi := sweep.Wilson(k, n)
			s.X = append(s.X, at(r))
			s.Y = append(s.Y, 100*float64(k)/float64(max(n, 1)))
			s.Low, s.High = append(s.Low, 100*lo), append(s.High, 100*hi)
		}
		out = append(out, SweepPlot{File: plot.file, RatePlot: rp})
	}
	return out
}

// sweepAxis is how a plot names the swept parameter key: the x axis's
// label, where the rule at the TTL goes (0: none) and the parameter in
// the title's words, from the sweep's keys (a fault's size from its
// kind's declaration in the registry).
func sweepAxis(name string) (xlabel string, mark float64, what string) {
	key, _ := sweep.LookupKey(name)
	mark = 1.0
	if key.Rate() || key.Name == "ttl" {
		mark = 0
	}
	return key.Axis(), mark, key.What
}

// SweepTable prints a sweep's rows as a table for a terminal.
func SweepTable(w io.Writer, rows []sweep.Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tVALUE\tVIOLATED\tDAMAGED\tPER 1000 CS\tFENCED REJECTIONS\tUNKNOWN")
	for _, r := range rows {
		if r.NoData() {
			fmt.Fprintf(tw, "%s\t%s=%s\tno data\tno decided trial\t-\t-\t%d of %d\n", r.Lock, r.Param, r.Value.Format(r.Param), r.Unknown, r.Trials)
			continue
		}
		lo, hi := sweep.Wilson(r.Damaged, r.Decided())
		fmt.Fprintf(tw, "%s\t%s=%s\t%d/%d\t%d/%d (95%%: %.0f-%.0f%%)\t%.1f\t%d\t%d\n", r.Lock, r.Param, r.Value.Format(r.Param),
			r.Violated, r.Decided(), r.Damaged, r.Decided(), 100*lo, 100*hi, r.PerThousand(), r.Refused, r.Unknown)
	}
	tw.Flush()
}
