package sweep

import (
	"encoding/csv"
	"os"
	"slices"
	"testing"
)

// TestPublishedDebateCSV: the debate chart's CSV in docs/ has the columns
// sim sweep writes today, reads back, and every one of its points has a
// decided trial (a point with none would be drawn as no data, and
// docs/rates.md's reading of the chart would rest on nothing).
func TestPublishedDebateCSV(t *testing.T) {
	const file = "../docs/debate/sweep.csv"
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head, err := csv.NewReader(f).Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(head, Header) {
		t.Fatalf("%s: columns %v, but sim sweep writes %v: play the debate sweep again (docs/rates.md, The debate chart)", file, head, Header)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", file)
	}
	for _, r := range rows {
		if r.NoData() {
			t.Errorf("%s: %s at %v has no decided trial", file, r.Lock, r.Resolved)
		}
	}
	unknown, trials, tooMany := Undecided(rows)
	if tooMany {
		t.Errorf("%s: %d of %d trials unknown", file, unknown, trials)
	}
}
