package findings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/promise"
)

// TestWriteupOlderThanItsRowIsRefused: a defect's write-up checked
// against the run of its row is shown, and its report says where the code
// is; one checked against an earlier run than the row is refused, and the
// page and report say why; a write-up with an unknown field or property
// is an error naming its file.
func TestWriteupOlderThanItsRowIsRefused(t *testing.T) {
	find := stories(t)
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib-token-release.yaml", `library: lib
property: token-release
title: "release() deletes the key whoever holds it"
whose: "lib 1.0.0"
where: "https://example.org/lib/blob/v1.0.0/index.js#L41-L45"
newest: "1.0.0 is the newest release"
fix: "Delete the key only while it holds the caller's token."
checked: 2026-12-07
`)
	ws, err := LoadWriteups(dir)
	if err != nil || len(ws) != 1 {
		t.Fatalf("LoadWriteups: %v, %d", err, len(ws))
	}
	for _, tc := range []struct {
		date  string
		shown bool
	}{{"2026-12-07", true}, {"2026-12-08", false}} {
		r := &Report{Subjects: []Subject{{Name: "lib", Lock: "redis", Program: []string{"node", "examples/lib/client.js"}, Date: tc.date,
			Promises: promise.Set{exclusion, tokenRelease}, Cells: []Cell{finding("release-a")}}}}
		r.Judge(find)
		r.Attach(ws)
		d := r.DefectList()
		if len(d) != 1 {
			t.Fatalf("%d defects", len(d))
		}
		report := string(r.DefectReport(d[0]))
		switch {
		case tc.shown && (d[0].Writeup == nil || d[0].Title() != "release() deletes the key whoever holds it" || !strings.Contains(report, "index.js#L41-L45")):
			t.Errorf("row of %s: the write-up was not shown: %+v\n%s", tc.date, d[0], report)
		case !tc.shown && (d[0].Writeup != nil || !strings.Contains(d[0].Stale, "checked against the run of 2026-12-07; the row was played 2026-12-08") || !strings.Contains(report, "not shown")):
			t.Errorf("row of %s: a write-up older than its row was not refused: %+v\n%s", tc.date, d[0], report)
		}
	}
	write("bad.yaml", "library: lib\nproperty: fencing\n")
	if _, err := LoadWriteups(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a bad write-up: %v", err)
	}
}

// TestWriteDefectReports: each defect gets its report beside the page,
// and a report of a defect no longer shown is removed, while a file
// locksim did not write is left alone.
func TestWriteDefectReports(t *testing.T) {
	find := stories(t)
	dir := t.TempDir()
	mine := filepath.Join(dir, "notes.md")
	gone := filepath.Join(dir, "old-exclusion.md")
	os.WriteFile(mine, []byte("a person's notes\n"), 0o644)
	os.WriteFile(gone, []byte(ReportMark+"\n# gone\n"), 0o644)
	r := &Report{Subjects: []Subject{{Name: "lib", Lock: "redis", Program: []string{"node", "examples/lib/client.js"},
		Promises: promise.Set{exclusion, tokenRelease}, Cells: []Cell{finding("release-a")}}}}
	r.Judge(find)
	written, err := r.WriteDefectReports(dir)
	if err != nil || len(written) != 1 || filepath.Base(written[0]) != "lib-token-release.md" {
		t.Fatalf("written %v, %v", written, err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Error("the report of a defect no longer shown is still there")
	}
	if _, err := os.Stat(mine); err != nil {
		t.Error("a file locksim did not write was removed")
	}
}
