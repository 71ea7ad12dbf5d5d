package cost

// write.go: cost.csv and cost.json.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"time"
)

// CSVHeader is cost.csv's first line: a row per figure. Times are in
// microseconds; ratio_* is the figure over its floor's (acquire-release
// only); extra_p50_us is what a defence adds to a plain critical section
// at the median (for the watchdog: one renewal, paid every TTL/3 held).
var CSVHeader = []string{"option", "lock", "setting", "measure", "p50_us", "p99_us", "samples",
	"per_sec", "granted", "refused", "floor", "ratio_p50", "ratio_p99", "extra_p50_us", "error"}

// The measures of cost.csv.
const (
	MeasureFloor          = "floor"
	MeasureAcquireRelease = "acquire-release"
	MeasureOneLock        = "contended-one-lock"
	MeasureOwnLocks       = "contended-own-locks"
	// A critical section's measure is "section-" and its defence; the
	// watchdog's, MeasureWatchdog.
	MeasureSection  = "section-"
	MeasureWatchdog = "watchdog-renewal"
)

// CSV is cost.csv.
func (r *Result) CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(CSVHeader)
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
	num := func(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }
	lat := func(l Latency) []string { return []string{us(l.P50), us(l.P99), strconv.Itoa(l.Samples)} }
	rate := func(r Rate) []string {
		return []string{"", "", "", num(r.PerSec, 1), strconv.Itoa(r.Granted), strconv.Itoa(r.Refused)}
	}
	line := func(row Row, measure string, fig []string, tail ...string) {
		rec := append([]string{row.Key, row.Lock, row.Setting, measure}, fig...)
		for len(rec) < 10 {
			rec = append(rec, "")
		}
		rec = append(rec, tail...)
		for len(rec) < len(CSVHeader) {
			rec = append(rec, "")
		}
		w.Write(rec)
	}
	for _, f := range r.Floors {
		w.Write(append(append([]string{f.Name, "", "", MeasureFloor}, lat(f.Latency)...), "", "", "", f.Name, "1", "1", "", ""))
	}
	for _, row := range r.Rows {
		if row.Err != "" {
			line(row, MeasureAcquireRelease, nil, row.Floor, "", "", "", row.Err)
			if row.AcquireRelease.Samples == 0 {
				continue
			}
		}
		line(row, MeasureAcquireRelease, lat(row.AcquireRelease), row.Floor, num(row.RatioP50, 2), num(row.RatioP99, 2))
		if row.OneLock.Granted > 0 {
			line(row, MeasureOneLock, rate(row.OneLock))
		}
		if row.FourLocks.Granted > 0 {
			line(row, MeasureOwnLocks, rate(row.FourLocks))
		}
		for _, d := range Defences {
			l, ok := row.Defences[d]
			if !ok {
				continue
			}
			m := MeasureSection + d
			if d == DefenceWatchdog {
				m = MeasureWatchdog
			}
			line(row, m, lat(l), "", "", "", us(row.Extra(d)))
		}
	}
	w.Flush()
	return b.Bytes()
}

// JSON is cost.json.
func (r *Result) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
