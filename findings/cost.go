package findings

// cost.go: each subject's cost line, from the one sim cost run the page
// carries (Report.Cost): its lock's acquire and release, p50 and p99,
// as a multiple of the floor measured in that run, and its locks per
// second. The figures are sim cost's; this file only picks a subject's
// rows and words them.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/cost"
)

// SetCost puts the sim cost run r on the page: its figures, where they
// came from, without its chart's marks (the page has its own verdicts).
func (r *Report) SetCost(res *cost.Result) {
	c := *res
	c.Marks, c.Verdicts = nil, ""
	r.Cost = &c
}

// CostSource says where the page's cost figures come from: the run's
// command and date ("`sim cost --duration 2s`, run 2026-12-04 on 2
// cores"); "" when the page carries none.
func (r *Report) CostSource() string {
	c := r.Cost
	if c == nil {
		return ""
	}
	cmd := c.Command
	if cmd == "" {
		cmd = "sim cost"
	}
	on := fmt.Sprintf("on %d cores", c.Cores)
	switch {
	case c.Load > float64(c.Cores):
		on = fmt.Sprintf("at load %.1f on %d cores: BUSY, its figures are not an idle machine's", c.Load, c.Cores)
	case c.Load > 0:
		on = fmt.Sprintf("at load %.1f (%d cores)", c.Load, c.Cores)
	}
	return fmt.Sprintf("`bin/%s`, run %s %s", cmd, c.Started.Format("2006-01-02 15:04"), on)
}

// CostRows are the rows of the page's cost run that measured s's lock
// (several for a lock with several options: redlock's persistence,
// PostgreSQL direct and through pgbouncer); none with why: a client
// program (sim cost times locksim's own Go locks, not a program's
// library), no cost run on the page, or a lock that run did not measure.
func (r *Report) CostRows(s Subject) (rows []cost.Row, why string) {
	switch {
	case s.Program != nil:
		return nil, "not measured: sim cost times locksim's own Go locks, not a client program's library"
	case r.Cost == nil:
		return nil, "not measured: the page carries no sim cost run (sim findings cost DIR puts one on it)"
	}
	for _, row := range r.Cost.Rows {
		if row.Lock == s.Lock && row.AcquireRelease.Samples > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Sprintf("not measured: the cost run did not measure lock %s (sim cost --locks %s does)", s.Lock, s.Lock)
	}
	return rows, ""
}

// CostCell is s's cost in the page's table, a line per option:
// "redlock/always 1732 / 5686 µs (28.7× / 48.9×), 428/s".
func (r *Report) CostCell(s Subject) []string {
	rows, why := r.CostRows(s)
	if rows == nil {
		w, _, _ := strings.Cut(why, ":")
		return []string{w}
	}
	var out []string
	for _, row := range rows {
		name := ""
		if len(rows) > 1 || row.Key != s.Lock {
			name = row.Key + " "
		}
		out = append(out, fmt.Sprintf("%s%s / %s µs (%s× / %s×), %.0f/s", name, us(row.AcquireRelease.P50), us(row.AcquireRelease.P99),
			ratio(row.RatioP50), ratio(row.RatioP99), row.OneLock.PerSec))
	}
	return out
}

// CostSentences say s's cost line in words, an option each, with the
// floor it is a multiple of; or why it has none.
func (r *Report) CostSentences(s Subject) []string {
	rows, why := r.CostRows(s)
	if rows == nil {
		return []string{"Cost: " + why + "."}
	}
	var out []string
	for _, row := range rows {
		what := row.Key
		if row.Setting != "" {
			what += " (" + row.Setting + ")"
		}
		line := fmt.Sprintf("Cost of %s: one acquire and release %s µs at the median, %s µs at p99, one client uncontended", what,
			us(row.AcquireRelease.P50), us(row.AcquireRelease.P99))
		if f, ok := r.Cost.Floor(row.Floor); ok {
			if row.FloorLatency.Samples > 0 {
				// Timed turn about with the lock, on its servers:
				// what its ratios divide by.
				f.Latency = row.FloorLatency
			}
			line += fmt.Sprintf(": %s× and %s× the floor measured in the same run (one %s, %s / %s µs)",
				ratio(row.RatioP50), ratio(row.RatioP99), f.Name, us(f.P50), us(f.P99))
		}
		line += fmt.Sprintf("; %.0f locks/s with %d clients contending for one lock.", row.OneLock.PerSec, r.Cost.Contenders)
		out = append(out, line)
	}
	out[len(out)-1] += " From " + r.CostSource() + "."
	return out
}

// us is a duration in whole microseconds, as sim cost's table gives it.
func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) }

// ratio is a multiple of a floor to one decimal.
func ratio(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
