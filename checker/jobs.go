package checker

import (
	"fmt"
	"slices"

	"github.com/locksim/locksim/history"
)

// JobsResult is the count of the job table: did a scheduled job run twice
// for one period? Its rows are the job notes the harness adds at the end
// of a run (history.OpJob), one a row, each the first effect of one run
// of the job. A redo of a half-done run, or a run displaced mid-work by a
// token check-and-set (token-cas), leaves two rows for its period, though
// the counter may show nothing but ordinary increments.
type JobsResult struct {
	// Rows is how many rows the job table held (0: the story runs no job).
	Rows int `json:"rows"`
	// RanTwiceCount counts the (job, period) pairs with more than one row.
	RanTwiceCount int        `json:"ran_twice_count"`
	RanTwice      []RanTwice `json:"ran_twice,omitempty"`
}

// RanTwice is one (job, period) the job table holds more than once.
type RanTwice struct {
	Job     string          `json:"job"`
	Period  string          `json:"period"`
	Clients []int           `json:"clients"` // who wrote each row, in order
	Rows    []history.Event `json:"rows"`    // the job notes
}

// Sentence says which job ran twice, for which period, and by whom.
func (t RanTwice) Sentence() string {
	who := make([]string, len(t.Clients))
	for i, c := range t.Clients {
		who[i] = fmt.Sprint(c)
	}
	return fmt.Sprintf("job %s ran %d times for period %s (clients %s): the job table has a row for each run", t.Job, len(t.Rows), t.Period, joinAnd(who))
}

// checkJobs counts the job notes by (job, period).
func checkJobs(p *parsed) JobsResult {
	type key struct{ job, period string }
	var r JobsResult
	byKey := map[key][]history.Event{}
	var order []key
	for _, e := range p.notes {
		if e.Op != history.OpJob {
			continue
		}
		r.Rows++
		k := key{e.Job, e.Period}
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], e)
	}
	for _, k := range order {
		rows := byKey[k]
		if len(rows) < 2 {
			continue
		}
		t := RanTwice{Job: k.job, Period: k.period, Rows: slices.Clone(rows)}
		for _, e := range rows {
			t.Clients = append(t.Clients, e.Process)
		}
		r.RanTwice = append(r.RanTwice, t)
	}
	r.RanTwiceCount = len(r.RanTwice)
	return r
}
