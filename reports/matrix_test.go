package reports

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/scenarios"
)

// fakeMatrix is a table with one cell of each kind, made up: nothing runs.
func fakeMatrix(dir string) *matrix.Matrix {
	m := &matrix.Matrix{
		Locks: []string{"redis", "redis-plain-del", "postgres-session"},
		Scenarios: []*scenarios.Scenario{
			{Name: "redis-unsafe-release", Expected: "unsafe"},
			{Name: "redis-ttl-expiry", Expected: "unsafe"},
		},
		Cells: map[[2]string]*matrix.Cell{},
	}
	add := func(c *matrix.Cell) {
		c.Dir = filepath.Join(dir, c.Lock, c.Scenario)
		m.Cells[[2]string{c.Lock, c.Scenario}] = c
	}
	add(&matrix.Cell{Lock: "redis", Scenario: "redis-unsafe-release", Expected: "unsafe",
		Story:     "step 4 (client 1's release ends ok): refused (not-held)",
		CFSkipped: "it changes the lock (redis-plain-del -> redis: with the token-checked release), which means nothing for lock redis", CFChangesLock: true})
	add(&matrix.Cell{Lock: "redis-plain-del", Scenario: "redis-unsafe-release", Ran: true, Verdict: "unsafe", Expected: "unsafe",
		CF: "safe", CFFlipped: true, Summary: "unsafe: clients 1 and 2 both held lock L <between> t=0.3s and t=0.6s"})
	add(&matrix.Cell{Lock: "redis", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "unsafe", Expected: "unsafe", CF: "unsafe"})
	add(&matrix.Cell{Lock: "redis-plain-del", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "safe", Expected: "unsafe",
		CFSkipped: "it changes the lock (a -> b: x), which means nothing for lock redis-plain-del", CFChangesLock: true})
	add(&matrix.Cell{Lock: "postgres-session", Scenario: "redis-unsafe-release", NA: "scenario redis-unsafe-release uses a redis lock; postgres-session is a postgres lock"})
	add(&matrix.Cell{Lock: "postgres-session", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "unknown", Slow: true, Expected: "unsafe",
		Summary: "unknown: the machine was too slow for this story | pipes"})
	return m
}

// TestMatrixTable renders the lock-by-scenario table of made-up results:
// each kind of cell says what it must (verdict and whether it is the
// story's, the counterfactual's verdict, the story that did not happen and
// why, unknown, n/a), in the terminal table, in Markdown and in HTML.
func TestMatrixTable(t *testing.T) {
	dir := t.TempDir()
	m := fakeMatrix(filepath.Join(dir, "runs"))
	var term bytes.Buffer
	MatrixTable(&term, m)
	lines := strings.Split(strings.TrimSpace(term.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("terminal table: want header, 2 rows, tally; got\n%s", term.String())
	}
	for _, want := range []string{"SCENARIO", "EXPECTED", "REDIS", "REDIS-PLAIN-DEL", "POSTGRES-SESSION"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("header %q lacks %q", lines[0], want)
		}
	}
	for _, c := range []struct {
		line int
		want []string
	}{
		{1, []string{"redis-unsafe-release", "story did not happen: step 4 (client 1's release ends ok)", "unsafe, as expected; cf safe", "n/a"}},
		{2, []string{"redis-ttl-expiry", "unsafe, as expected; cf unsafe (no flip)", "safe, NOT unsafe; cf skipped (it changes the lock)", "unknown (machine too slow)"}},
		{3, []string{"6 cell(s): 2 as expected, 1 another verdict, 1 story did not happen, 1 unknown, 1 n/a"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(lines[c.line], w) {
				t.Errorf("terminal line %d %q lacks %q", c.line, lines[c.line], w)
			}
		}
	}
	// A long reason is cut in the terminal at a word's end, whole
	// elsewhere.
	if strings.Contains(term.String(), "refused (not-held)") || !strings.Contains(term.String(), "ends ok): refused…") {
		t.Errorf("terminal cell not cut to width at a word's end:\n%s", term.String())
	}

	md := MatrixMarkdown(m)
	for _, want := range []string{
		"| scenario | expected | redis | redis-plain-del | postgres-session |",
		"| --- | --- | --- | --- | --- |",
		"| redis-unsafe-release | unsafe | ⚠️ story did not happen: step 4 (client 1's release ends ok): refused (not-held) | ✅ unsafe, as expected; cf safe | n/a: scenario redis-unsafe-release uses a redis lock; postgres-session is a postgres lock |",
		"| redis-ttl-expiry | unsafe | ✅ unsafe, as expected; cf unsafe (no flip) | ❌ safe, NOT unsafe; cf skipped (it changes the lock) | ❔ unknown (machine too slow) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}

	var page bytes.Buffer
	if err := WriteMatrixHTML(&page, m, dir); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{
		"<th>redis-plain-del</th>", `<td class="story"`, `<td class="match"`, `<td class="differs"`, `<td class="unknown"`, `<td class="na"`,
		`href="runs/redis-plain-del/redis-unsafe-release/report.html"`, // relative to the page
		"&lt;between&gt;", // the checkers' sentence, escaped, as the cell's title
		"postgres-session is a postgres lock",
		"story did not happen: step 4 (client 1&#39;s release ends ok): refused (not-held)</a>", // the whole reason
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// Self-contained: no script, nothing fetched.
	for _, bad := range []string{"<script", "http://", "https://", "<link", "<img"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML holds %q: it must be self-contained", bad)
		}
	}
	if strings.Contains(html, "<between>") {
		t.Error("HTML does not escape the summary")
	}
}
