package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"locksim/runner"
	"locksim/scenarios"
	"locksim/worker"
)

// fakeMatrix is a table with one cell of each kind, made up: nothing runs.
func fakeMatrix(dir string) *matrix {
	m := &matrix{
		Locks: []string{"redis", "redis-plain-del", "postgres-session"},
		Scenarios: []*scenarios.Scenario{
			{Name: "redis-unsafe-release", Expected: "unsafe"},
			{Name: "redis-ttl-expiry", Expected: "unsafe"},
		},
		Cells: map[[2]string]*matrixCell{},
	}
	add := func(c *matrixCell) {
		c.Dir = filepath.Join(dir, c.Lock, c.Scenario)
		m.Cells[[2]string{c.Lock, c.Scenario}] = c
	}
	add(&matrixCell{Lock: "redis", Scenario: "redis-unsafe-release", Expected: "unsafe",
		Story:     "step 4 (client 1's release ends ok): refused (not-held)",
		CFSkipped: "it changes the lock (redis-plain-del -> redis: with the token-checked release), which means nothing for lock redis"})
	add(&matrixCell{Lock: "redis-plain-del", Scenario: "redis-unsafe-release", Ran: true, Verdict: "unsafe", Expected: "unsafe",
		CF: "safe", CFFlipped: true, Summary: "unsafe: clients 1 and 2 both held lock L <between> t=0.3s and t=0.6s"})
	add(&matrixCell{Lock: "redis", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "unsafe", Expected: "unsafe", CF: "unsafe"})
	add(&matrixCell{Lock: "redis-plain-del", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "safe", Expected: "unsafe",
		CFSkipped: "it changes the lock (a -> b: x), which means nothing for lock redis-plain-del"})
	add(&matrixCell{Lock: "postgres-session", Scenario: "redis-unsafe-release", NA: "scenario redis-unsafe-release uses a redis lock; postgres-session is a postgres lock"})
	add(&matrixCell{Lock: "postgres-session", Scenario: "redis-ttl-expiry", Ran: true, Verdict: "unknown", Slow: true, Expected: "unsafe",
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
	printMatrix(&term, m)
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
	// A long reason is cut in the terminal, whole elsewhere.
	if strings.Contains(term.String(), "refused (not-held)") || !strings.Contains(term.String(), "…") {
		t.Errorf("terminal cell not cut to width:\n%s", term.String())
	}

	md := matrixMarkdown(m)
	for _, want := range []string{
		"| scenario | expected | redis | redis-plain-del | postgres-session |",
		"| --- | --- | --- | --- | --- |",
		"| redis-unsafe-release | unsafe | ⚠️ story did not happen: step 4 (client 1's release ends ok): refused (not-held) | ✅ unsafe, as expected; cf safe | n/a |",
		"| redis-ttl-expiry | unsafe | ✅ unsafe, as expected; cf unsafe (no flip) | ❌ safe, NOT unsafe; cf skipped (it changes the lock) | ❔ unknown (machine too slow) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}

	var page bytes.Buffer
	if err := writeMatrixHTML(&page, m, dir); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{
		"<th>redis-plain-del</th>", `<td class="story"`, `<td class="match"`, `<td class="differs"`, `<td class="unknown"`, `<td class="na"`,
		`href="runs/redis-plain-del/redis-unsafe-release/report.html"`, // relative to the page
		"&lt;between&gt;", // the checkers' sentence, escaped, as the cell's title
		"postgres-session is a postgres lock",
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

// TestMatrixBadInputExits2: sim matrix refuses bad input in one line,
// before anything starts.
func TestMatrixBadInputExits2(t *testing.T) {
	// A cell's run directory that holds something else is refused, as
	// sim run's --out is.
	notEmpty := t.TempDir()
	os.MkdirAll(filepath.Join(notEmpty, "redis", "redis-ttl-expiry"), 0o755)
	os.WriteFile(filepath.Join(notEmpty, "redis", "redis-ttl-expiry", "mine.txt"), []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"matrix no locks", []string{"matrix", "redis-ttl-expiry"}, "--locks: name the locks to compare"},
		{"matrix unknown lock", []string{"matrix", "--locks", "redis,zookeeper"}, `--locks: unknown lock "zookeeper"`},
		{"matrix unknown scenario", []string{"matrix", "--locks", "redis", "redis-ttl-expiri"}, "did you mean: redis-ttl-expiry"},
		{"matrix nothing to play", []string{"matrix", "--locks", "postgres-session", "redis-ttl-expiry"}, "no scenario given can be played with postgres-session"},
		{"matrix out not empty", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--out", notEmpty}, "not empty and not a run directory"},
		{"matrix bad flag", []string{"matrix", "--locks", "redis", "--colour"}, "flag provided but not defined: -colour"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errb := sim(t, c.args...)
			if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errb, c.want)
			}
		})
	}
}

// TestMatrixClientProgramNA: with a client program, a story that writes to
// the protected storage is n/a when the program's hello does not cover it
// (protocol v1 has no writes) and played when it does (v2, storage mode
// plain); a story without one is played; a counterfactual that changes
// the lock to one the program does not implement is skipped.
func TestMatrixClientProgramNA(t *testing.T) {
	var list []*scenarios.Scenario
	for _, name := range []string{"redlock-clock-jump", "redlock-pause-after-acquire", "redlock-pause-during-acquire"} {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, sc)
	}
	argv := []string{"node", "client.js"}
	v1 := worker.Hello{Protocol: 1, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "extend"}}
	v2 := worker.Hello{Protocol: 2, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "extend", "write"}, StorageModes: []string{"plain"}}
	for _, tc := range []struct {
		name  string
		hello *worker.Hello
		na    string
	}{{"Go worker", nil, ""}, {"v1", &v1, "protocol v1"}, {"v2", &v2, ""}} {
		var program func(*scenarios.Scenario) error
		if tc.hello != nil {
			h := *tc.hello
			program = func(sc *scenarios.Scenario) error { return runner.ClientProgramProblem(sc, argv, h) }
		}
		m, plays := planMatrix([]string{"redlock"}, list, t.TempDir(), program)
		jump, pause := m.Cells[[2]string{"redlock", "redlock-clock-jump"}], m.Cells[[2]string{"redlock", "redlock-pause-after-acquire"}]
		if jump.NA != "" || plays[jump].sc == nil {
			t.Errorf("%s: redlock-clock-jump is n/a (%s), want it played", tc.name, jump.NA)
		}
		if tc.na == "" && pause.NA != "" || tc.na != "" && !strings.Contains(pause.NA, tc.na) {
			t.Errorf("%s: redlock-pause-after-acquire n/a = %q, want n/a saying %q", tc.name, pause.NA, tc.na)
		}
		during := m.Cells[[2]string{"redlock", "redlock-pause-during-acquire"}]
		switch {
		case tc.hello == nil && (during.CFSkipped != "" || plays[during].sc.Counterfactual == nil):
			t.Errorf("%s: redlock-pause-during-acquire's counterfactual skipped (%s), want it played", tc.name, during.CFSkipped)
		case tc.name == "v2" && (!strings.Contains(during.CFSkipped, "lock redlock-no-validity") || plays[during].sc.Counterfactual != nil):
			t.Errorf("%s: redlock-pause-during-acquire's counterfactual skipped %q, want skipped for its lock redlock-no-validity", tc.name, during.CFSkipped)
		}
	}
}
