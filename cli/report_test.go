package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/outdir"
)

// junitDoc is the part of a JUnit file the tests read.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Cases []struct {
			ClassName string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestRunRegexWritesCIOutputs runs a family by regex on real servers with
// --expect forcing one mismatch: each run gets its own directory under
// --out, the JUnit file parses and counts one failure with the evidence,
// the Markdown table has both runs; then sim check and sim report work on
// the run directories offline.
func TestRunRegexWritesCIOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	junit := filepath.Join(dir, "ci", "junit.xml")
	md := filepath.Join(dir, "ci", "summary.md")
	code, stdout, stderr := sim(t, "run", "^redlock-clock-jump(-control)?$", "--expect", "safe", "-q",
		"--out", out, "--junit", junit, "--markdown", md)
	if code != exitMismatch {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b)
	}
	if doc.Tests != 2 || doc.Failures != 1 || doc.Errors != 0 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 2 {
		t.Fatalf("tests %d, failures %d, errors %d; want 2, 1, 0:\n%s", doc.Tests, doc.Failures, doc.Errors, b)
	}
	failures := 0
	for _, c := range doc.Suites[0].Cases {
		if c.ClassName != "locksim" {
			t.Errorf("case %s: classname %q", c.Name, c.ClassName)
		}
		if c.Failure == nil {
			continue
		}
		failures++
		if c.Name != "redlock-clock-jump" || !strings.Contains(c.Failure.Message, "verdict unsafe, expected safe") ||
			!strings.Contains(c.Failure.Body, "overlap: clients 1 and 2 both held L") {
			t.Errorf("failure of %s: %q\n%s", c.Name, c.Failure.Message, c.Failure.Body)
		}
	}
	if failures != 1 {
		t.Errorf("%d test cases failed, want 1", failures)
	}

	summary, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 scenario run(s), 1 as expected, 1 differed", "| ❌ | redlock-clock-jump | **unsafe** | safe |", "| ✅ | redlock-clock-jump-control | **safe** | safe |"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("markdown lacks %q:\n%s", want, summary)
		}
	}

	jump, control := filepath.Join(out, "redlock-clock-jump"), filepath.Join(out, "redlock-clock-jump-control")
	for _, d := range []string{jump, control} {
		for _, f := range []string{"history.jsonl", "result.json", "report.html", "timeline.svg", "junit.xml", "history.html"} {
			if fi, err := os.Stat(filepath.Join(d, f)); err != nil || fi.Size() == 0 {
				t.Errorf("%s lacks %s", d, f)
			}
		}
	}

	// Offline: the stored expectation is "safe" for both.
	if code, stdout, stderr := sim(t, "check", jump); code != exitMismatch || !strings.Contains(stdout, "verdict unsafe") {
		t.Errorf("sim check %s: exit %d, want 1\n%s%s", jump, code, stdout, stderr)
	}
	if code, stdout, stderr := sim(t, "check", control); code != exitOK {
		t.Errorf("sim check %s: exit %d, want 0\n%s%s", control, code, stdout, stderr)
	}
	if code, _, _ := sim(t, "check", jump, "--expect", "unsafe"); code != exitOK {
		t.Errorf("sim check --expect unsafe: exit %d, want 0", code)
	}
	os.Remove(filepath.Join(jump, "report.html"))
	os.Remove(filepath.Join(jump, "timeline.svg"))
	if code, stdout, stderr := sim(t, "report", jump); code != exitOK {
		t.Fatalf("sim report: exit %d\n%s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(filepath.Join(jump, "report.html"))
	if err != nil || !strings.Contains(string(page), "clients 1 and 2 both hold L") {
		t.Errorf("sim report did not rebuild report.html with the timeline (%v)", err)
	}
}

// TestOfflineBadInputExits2: sim check and sim report on what is not a
// run directory.
func TestOfflineBadInputExits2(t *testing.T) {
	empty := t.TempDir()
	noResult := t.TempDir()
	os.WriteFile(filepath.Join(noResult, "history.jsonl"), []byte("{\"seq\":1}\n"), 0o644)
	badHistory := t.TempDir()
	os.WriteFile(filepath.Join(badHistory, "history.jsonl"), []byte("{not json\n"), 0o644)
	os.WriteFile(filepath.Join(badHistory, "result.json"), []byte(`{"scenario":"x","expected":"safe"}`), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no dir", []string{"check"}, "usage: sim check DIR"},
		{"missing", []string{"check", filepath.Join(empty, "nope")}, "not a run directory"},
		{"no history", []string{"report", empty}, "no history.jsonl"},
		{"no result", []string{"check", noResult}, "result.json"},
		{"bad history", []string{"check", badHistory}, "line 1"},
		{"bad expect", []string{"check", badHistory, "--expect", "fine"}, "--expect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := sim(t, c.args...)
			if code != exitHarness || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// TestOfflineInvalidHistoryExits2: sim check and sim report refuse a
// history that breaks the recording's rules, with one line naming the
// file, the line and the rule.
func TestOfflineInvalidHistoryExits2(t *testing.T) {
	for _, c := range []struct {
		name, history, want string
	}{
		{"no invocations", `{"seq":1,"t":1000,"process":1,"type":"ok","op":"acquire","key":"L"}
{"seq":2,"t":2000,"process":2,"type":"ok","op":"acquire","key":"L"}
{"seq":3,"t":3000,"process":3,"type":"ok","op":"acquire","key":"L"}
`, "history.jsonl: line 1: completion without an invocation: ok acquire of process 1 (rule: invoke-before-completion)"},
		{"op mismatch", `{"seq":1,"t":1000,"process":0,"type":"note","op":"step"}
{"seq":2,"t":2000,"process":1,"type":"invoke","op":"acquire","key":"L"}
{"seq":3,"t":3000,"process":1,"type":"ok","op":"release","key":"L"}
`, "history.jsonl: line 3: ok release of process 1 completes an invocation of acquire (rule: completion-matches-invoke)"},
	} {
		// A run directory of locksim's, whose history was then broken.
		d, err := outdir.Claim(t.TempDir(), outdir.Run, "test")
		if err != nil {
			t.Fatal(err)
		}
		dir := d.Path()
		d.WriteFile("history.jsonl", []byte(c.history))
		d.WriteFile("result.json", []byte(`{"scenario":"x","expected":"safe","verdict":"safe"}`))
		for _, cmd := range []string{"check", "report"} {
			t.Run(c.name+"/"+cmd, func(t *testing.T) {
				code, stdout, stderr := sim(t, cmd, dir)
				if code != exitHarness || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, filepath.Join(dir, c.want)) || stdout != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, stdout, stderr, c.want)
				}
			})
		}
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
			t.Errorf("%s: sim report wrote a report of an invalid history", c.name)
		}
	}
}

// TestRunNoMatchKeepsDidYouMean: a name that is neither a scenario nor a
// regex matching one still gets the "did you mean" line.
func TestRunNoMatchKeepsDidYouMean(t *testing.T) {
	for _, name := range []string{"redlock-clockjump", "redlock-["} {
		code, _, stderr := sim(t, "run", name)
		if code != exitHarness || !strings.Contains(stderr, "no scenario named") {
			t.Errorf("sim run %s: exit %d, stderr %q", name, code, stderr)
		}
	}
}

// TestStepNeedsOneScenario: workshop mode plays one story.
func TestStepNeedsOneScenario(t *testing.T) {
	code, _, stderr := sim(t, "run", "--all", "--step")
	if code != exitHarness || !strings.Contains(stderr, "--step plays one story") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestStepWorkshopMode plays redlock-clock-jump in workshop mode with
// Enter pressed for every step: before client 2 acquires, the state says
// client 1 holds A, B and C and C's clock has jumped.
func TestStepWorkshopMode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	var stdout, stderr strings.Builder
	enter := strings.NewReader(strings.Repeat("\n", 20))
	code := Execute([]string{"run", "redlock-clock-jump", "--step", "--out", t.TempDir()}, enter, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	log := stderr.String()
	// The prompt before client 2's acquire: the one that shows step 3 of
	// Kleppmann's story.
	i := strings.Index(log, "3. Client 2 acquires the lock on nodes C, D and E.")
	j := strings.LastIndex(log[:max(i, 0)], "── t=")
	if i < 0 || j < 0 {
		t.Fatalf("no prompt before step 3 of the story in the narration:\n%s", log)
	}
	before := log[j:]
	before, _, _ = strings.Cut(before, "[Enter]")
	for _, want := range []string{"3. Client 2 acquires the lock on nodes C, D and E.", "next: client 2: acquire",
		"Redis A    client 1 (TTL ends in", "Redis C    free; clock +15s", "Client 1   holds the lock, for", "Client 2   holds nothing; cut off from A,B"} {
		if !strings.Contains(before, want) {
			t.Errorf("step 5 lacks %q:\n%s", want, before)
		}
	}
	if n := strings.Count(log, "[Enter] to go on"); n != 9 {
		t.Errorf("%d prompts, want one per step (9)", n)
	}
}
