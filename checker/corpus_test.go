package checker

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
)

// corpusWant is a corpus entry's NAME.want: the verdict and the counts of
// findings (absent counts are 0), or the rule an invalid history breaks.
type corpusWant struct {
	Verdict   Verdict `json:"verdict"`
	Overlaps  int     `json:"overlaps"`
	Lost      int     `json:"lost"`
	Stale     int     `json:"stale"`
	Backwards int     `json:"backwards"`
	Leaks     int     `json:"leaks"`
	// Summary is a substring of the summary.
	Summary string `json:"summary"`
	// Timeout and MaxGap are Options (durations: "100ms").
	Timeout string `json:"timeout"`
	MaxGap  string `json:"max_gap"`
	// Invalid is the rule an invalid history breaks, Line its line.
	Invalid string `json:"invalid"`
	Line    int    `json:"line"`
}

// TestCorpus checks every testdata/corpus/NAME.jsonl against NAME.want: add
// a history by dropping the two files there.
func TestCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "corpus")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	wants, _ := filepath.Glob(filepath.Join(dir, "*.want"))
	if len(files) == 0 || len(files) != len(wants) {
		t.Fatalf("%d histories and %d .want files in %s", len(files), len(wants), dir)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			var w corpusWant
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&w); err != nil {
				t.Fatalf("%s.want: %v", name, err)
			}
			events, err := history.Load(path)
			if w.Invalid != "" {
				checkInvalid(t, path, w, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var o Options
			if o.Timeout, err = parseDuration(w.Timeout); err != nil {
				t.Fatal(err)
			}
			if o.MaxGap, err = parseDuration(w.MaxGap); err != nil {
				t.Fatal(err)
			}
			r := mustCheck(t, events, o)
			got := corpusWant{Verdict: r.Verdict, Overlaps: r.Mutex.OverlapCount, Lost: r.Damage.LostUpdateCount,
				Stale: r.Damage.StaleWriteCount, Backwards: r.Fencing.BackwardsCount, Leaks: r.Liveness.LeakCount,
				Summary: w.Summary, Timeout: w.Timeout, MaxGap: w.MaxGap}
			if got != w || !strings.Contains(r.Summary, w.Summary) {
				b, _ := json.MarshalIndent(r, "", "  ")
				t.Errorf("got  %+v\nwant %+v\nresult: %s", got, w, b)
			}
		})
	}
}

// checkInvalid: Load refuses the history naming the rule and line, and
// Check refuses it too when given its events unvalidated.
func checkInvalid(t *testing.T, path string, w corpusWant, loadErr error) {
	var inv *history.InvalidError
	if !errors.As(loadErr, &inv) || inv.Rule != w.Invalid || (w.Line != 0 && inv.Line != w.Line) {
		t.Fatalf("Load: %v; want rule %s at line %d", loadErr, w.Invalid, w.Line)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []history.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e history.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	history.Sort(events)
	r, err := Check(events, Options{})
	if !errors.As(err, &inv) || inv.Rule != w.Invalid || r.Verdict != "" {
		t.Fatalf("Check: verdict %q, error %v; want no verdict and rule %s", r.Verdict, err, w.Invalid)
	}
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}
