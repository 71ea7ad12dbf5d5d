// trials.go is trials.csv: every trial of a sweep, one line each, with the
// seed and schedule that decide it and how it ended. A shard writes its
// own trials; sim sweep merge joins them and checks that every trial of
// the sweep was played exactly once, so a merged sweep can be compared
// with the whole one trial by trial.

package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/runner"
)

// Trial is one trial of a sweep: the seed decides its Schedule (and so
// every column before Verdict); the rest is how it ended.
type Trial struct {
	// Number counts from 1 within its lock and point.
	Number int
	// Seed is the trial's seed (runner.TrialSeed of the sweep's seed, the
	// point and the trial).
	Seed uint64
	// Schedule is its planned faults, as runner.Planned prints them.
	Schedule string
	// Struck counts the faults that struck.
	Struck int
	// Verdict is the checker's: safe, unsafe, leaked, hung or unknown.
	Verdict checker.Verdict
	// Violated and Damaged are the trial's counts in its row (outcome).
	Violated, Damaged bool
	// CriticalSections counts the granted acquires.
	CriticalSections int
	// Summary is the check's one line.
	Summary string
	// Tries counts the times it was played: more than 1 when the timing
	// guard left the first tries unknown (Options.Tries).
	Tries int
	// Measured is its first fault as it struck, in TTLs (runner.Struck):
	// Planned the size it was to have, Struck the size it had, Lead how
	// long its critical section had run when it struck, Overrun how far
	// past the lease its critical section's write landed; each NaN when
	// not measured (an empty cell).
	Measured Measured
}

// Measured is a trial's fault as it struck, in multiples of the TTL.
type Measured struct{ Planned, Struck, Lead, Overrun float64 }

// unmeasured is a Measured with nothing measured.
var unmeasured = Measured{math.NaN(), math.NaN(), math.NaN(), math.NaN()}

// measuredOf is tr's first measured fault, in TTLs of ttl.
func measuredOf(tr *runner.Trial, ttl time.Duration) Measured {
	m := unmeasured
	for _, s := range tr.Struck {
		if s.Want == 0 || s.Size == 0 {
			continue
		}
		m.Planned, m.Struck, m.Lead = float64(s.Want)/float64(ttl), float64(s.Size)/float64(ttl), float64(s.Lead)/float64(ttl)
		if s.Overran {
			m.Overrun = float64(s.Overrun) / float64(ttl)
		}
		break
	}
	return m
}

// trialOf is trial number n's line, from its last play of tries, with
// lease ttl, and its outcome o.
func trialOf(tr *runner.Trial, n, tries int, ttl time.Duration, o Row) Trial {
	var plan []string
	for _, p := range tr.Plan {
		plan = append(plan, p.String())
	}
	return Trial{Number: n, Seed: tr.Seed, Schedule: strings.Join(plan, "; "), Struck: tr.Injected,
		Verdict: tr.Check.Verdict, Violated: o.Violated > 0, Damaged: o.Damaged > 0,
		CriticalSections: tr.Check.Mutex.Holds, Summary: tr.Check.Summary, Tries: tries, Measured: measuredOf(tr, ttl)}
}

// TrialsHeader is trials.csv's first line.
var TrialsHeader = []string{"lock", "param", "value", "trial", "seed", "schedule", "faults_struck", "verdict",
	"violated", "damaged", "critical_sections", "summary", "planned_ttl", "struck_ttl", "lead_ttl", "overrun_ttl", "tries"}

// ttlCell writes a multiple of the TTL, "" for NaN (not measured).
func ttlCell(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// parseTTLCell reads a ttlCell.
func parseTTLCell(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// WriteTrialsCSV writes every trial of rows (Row.Each), rows in order and
// each row's trials by number.
func WriteTrialsCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(TrialsHeader); err != nil {
		return err
	}
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	for _, r := range rows {
		value, _ := r.cells()
		for _, t := range r.Each {
			rec := []string{r.Lock, r.Param, value, strconv.Itoa(t.Number), strconv.FormatUint(t.Seed, 10), t.Schedule,
				strconv.Itoa(t.Struck), string(t.Verdict), b(t.Violated), b(t.Damaged), strconv.Itoa(t.CriticalSections), t.Summary,
				ttlCell(t.Measured.Planned), ttlCell(t.Measured.Struck), ttlCell(t.Measured.Lead), ttlCell(t.Measured.Overrun),
				strconv.Itoa(t.Tries)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadTrialsCSV reads what WriteTrialsCSV wrote into rows (their Each),
// matching each line to its row by lock and value. Errors name the line.
func ReadTrialsCSV(r io.Reader, rows []Row) error {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("line 1: empty file, expected the header %s", strings.Join(TrialsHeader, ","))
	}
	if err != nil {
		return err
	}
	if !slices.Equal(head, TrialsHeader) {
		return fmt.Errorf("line 1: header %s, expected %s", strings.Join(head, ","), strings.Join(TrialsHeader, ","))
	}
	at := map[[2]string]int{}
	for i, row := range rows {
		value, _ := row.cells()
		at[[2]string{row.Lock, value}] = i
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // csv.ParseError names the line
		}
		line, _ := cr.FieldPos(0)
		i, ok := at[[2]string{rec[0], rec[2]}]
		if !ok {
			return fmt.Errorf("line %d: lock %s at %s=%s is no row of sweep.csv", line, rec[0], rec[1], rec[2])
		}
		t := Trial{Schedule: rec[5], Verdict: checker.Verdict(rec[7]), Summary: rec[11]}
		for _, c := range []struct {
			name string
			n    *int
		}{{"trial", &t.Number}, {"faults_struck", &t.Struck}, {"critical_sections", &t.CriticalSections}, {"tries", &t.Tries}} {
			s := rec[slices.Index(TrialsHeader, c.name)]
			if *c.n, err = strconv.Atoi(s); err != nil || *c.n < 0 {
				return fmt.Errorf("line %d: %s: expected a count, got %q", line, c.name, s)
			}
		}
		for _, c := range []struct {
			name string
			x    *float64
		}{{"planned_ttl", &t.Measured.Planned}, {"struck_ttl", &t.Measured.Struck}, {"lead_ttl", &t.Measured.Lead}, {"overrun_ttl", &t.Measured.Overrun}} {
			s := rec[slices.Index(TrialsHeader, c.name)]
			if *c.x, err = parseTTLCell(s); err != nil {
				return fmt.Errorf("line %d: %s: expected a multiple of the TTL or nothing, got %q", line, c.name, s)
			}
		}
		if t.Tries < 1 {
			return fmt.Errorf("line %d: tries: expected 1 or more, got %d", line, t.Tries)
		}
		if t.Seed, err = strconv.ParseUint(rec[4], 10, 64); err != nil {
			return fmt.Errorf("line %d: seed: expected an unsigned integer, got %q", line, rec[4])
		}
		switch t.Verdict {
		case checker.Safe, checker.Unsafe, checker.Leaked, checker.Hung, checker.Unknown:
		default:
			return fmt.Errorf("line %d: verdict: expected safe, unsafe, leaked, hung or unknown, got %q", line, t.Verdict)
		}
		for _, c := range []struct {
			name string
			v    *bool
		}{{"violated", &t.Violated}, {"damaged", &t.Damaged}} {
			switch s := rec[slices.Index(TrialsHeader, c.name)]; s {
			case "0", "1":
				*c.v = s == "1"
			default:
				return fmt.Errorf("line %d: %s: expected 0 or 1, got %q", line, c.name, s)
			}
		}
		rows[i].Each = append(rows[i].Each, t)
	}
}

// checkEach checks that a merged row holds each of its trials 1..n once,
// and sorts them by number.
func checkEach(r *Row, n int) error {
	slices.SortFunc(r.Each, func(a, b Trial) int { return a.Number - b.Number })
	at := fmt.Sprintf("%s at %s=%s", r.Lock, r.Param, r.Value.Format(r.Param))
	want := 1
	for _, t := range r.Each {
		switch {
		case t.Number < want:
			return fmt.Errorf("%s: trial %d is in two shards' trials.csv", at, t.Number)
		case t.Number > want || t.Number > n:
			return fmt.Errorf("%s: trial %d is in no shard's trials.csv", at, want)
		}
		want++
	}
	if want <= n {
		return fmt.Errorf("%s: trial %d is in no shard's trials.csv", at, want)
	}
	return nil
}
