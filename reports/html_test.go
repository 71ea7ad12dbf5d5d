package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

var screenshot = flag.String("screenshot", "", "also save TestReportInChromium's screenshot here (e.g. ../docs/report.png)")

const markup = `<script>alert(1)</script>`

// writeRun writes a run directory for a recorded history.
func writeRun(t *testing.T, sc *scenarios.Scenario, history string, expected checker.Verdict) *runner.Outcome {
	t.Helper()
	events, res := load(t, history)
	r := &runner.Outcome{Scenario: sc, Dir: t.TempDir(), Seed: 42, Expected: expected, Check: res, Events: events, Duration: 1234 * time.Millisecond}
	if err := writeHistory(r.Dir, sc, events); err != nil {
		t.Fatal(err)
	}
	if err := WriteRunDir(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// writeHistory writes history.jsonl and the story into a run directory
// of locksim's, as the runner does.
func writeHistory(dir string, sc *scenarios.Scenario, events []history.Event) error {
	d, err := outdir.Claim(dir, outdir.Run, "test")
	if err != nil {
		return err
	}
	if err := runner.KeepStory(d, sc); err != nil {
		return err
	}
	f, err := d.Create("history.jsonl")
	if err != nil {
		return err
	}
	defer f.Close()
	return history.Write(f, events)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReportEscapesMarkup: a scenario whose name, title, explanation,
// source and narration contain markup, and a history whose details do,
// are shown as text in report.html and timeline.svg.
func TestReportEscapesMarkup(t *testing.T) {
	events, _ := load(t, "fenced-pause")
	for i := range events {
		if events[i].Type == history.Note || events[i].Detail != "" {
			events[i].Detail += " " + markup
		}
	}
	events[0].Key = markup
	sc := &scenarios.Scenario{Name: "evil" + markup, Title: "title " + markup, Explain: "explain " + markup,
		Source: "source " + markup, Fault: markup, Conditions: scenarios.Conditions{Lock: "redis" + markup, Nodes: 1, Clients: 2}}
	r := &runner.Outcome{Scenario: sc, Dir: t.TempDir(), Seed: 1, Expected: "safe", Check: check(t, events), Events: events}
	if err := WriteRunDir(r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.html", "timeline.svg"} {
		t.Run(name, func(t *testing.T) {
			s := read(t, filepath.Join(r.Dir, name))
			if strings.Contains(s, "<script") {
				t.Errorf("%s contains a <script element", name)
			}
			if !strings.Contains(s, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Errorf("%s does not show the markup as text", name)
			}
		})
	}
	wellFormed(t, read(t, filepath.Join(r.Dir, "timeline.svg")))
	// The summary keeps it as text too.
	if md := read(t, filepath.Join(r.Dir, "summary.md")); strings.Contains(md, "<script") {
		t.Error("summary.md contains <script")
	}
}

// TestLoadRunScenarioGone: a run directory whose scenario is no longer in
// the catalogue is reported from the story it keeps (scenario.yaml).
func TestLoadRunScenarioGone(t *testing.T) {
	sc, err := scenarios.Parse("gone.yaml", []byte(`name: gone-from-the-catalogue
title: A story that was removed
explain: Why it mattered.
source: seeds/001
lock: redlock
expected: unsafe
steps:
  - do: acquire
    client: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	r := writeRun(t, sc, "redlock-clock-jump", "unsafe")
	drawn := read(t, filepath.Join(r.Dir, "history.html")) // from the check's own linearization
	back, res, err := LoadRun(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Check.Derived != nil {
		t.Fatal("a Check read back from result.json has what a check derived")
	}
	if back.Scenario.Explain != sc.Explain || back.Scenario.Nodes != 5 || back.Expected != "unsafe" || back.Seed != 42 || res.Verdict != "unsafe" {
		t.Errorf("loaded %+v / %+v", back.Scenario, res)
	}
	if len(back.Events) != len(r.Events) {
		t.Errorf("%d events loaded, want %d", len(back.Events), len(r.Events))
	}
	if err := WriteRunDir(back); err != nil {
		t.Fatal(err)
	}
	if s := read(t, filepath.Join(r.Dir, "report.html")); !strings.Contains(s, "Why it mattered.") || !strings.Contains(s, "Redis E") {
		t.Error("rebuilt report lacks the stored explanation or the five nodes")
	}
	if read(t, filepath.Join(r.Dir, "history.html")) != drawn {
		t.Error("history.html checked again from the history differs from the one drawn from the run's check")
	}
}

func TestJUnitCountsFailures(t *testing.T) {
	events, res := load(t, "redlock-clock-jump")
	run := func(name string, expected checker.Verdict) *runner.Outcome {
		return &runner.Outcome{Scenario: &scenarios.Scenario{Name: name}, Expected: expected, Check: res, Events: events}
	}
	cases := []Case{
		{Name: "as-expected", Run: run("as-expected", "unsafe"), Duration: time.Second},
		{Name: "differs", Run: run("differs", "safe"), Duration: time.Second},
		{Name: "broken & <odd>", Err: errors.New("redis-server would not start"), Duration: time.Second},
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, cases); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b.String())
	}
	if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 3 {
		t.Fatalf("tests %d failures %d errors %d:\n%s", doc.Tests, doc.Failures, doc.Errors, b.String())
	}
	cs := doc.Suites[0].Cases
	if cs[0].Failure != nil || cs[0].Error != nil || cs[0].ClassName != "locksim" {
		t.Errorf("case 0: %+v", cs[0])
	}
	if cs[1].Failure == nil || !strings.Contains(cs[1].Failure.Message, "verdict unsafe, expected safe: unsafe: clients 1 and 2 both held lock L") {
		t.Errorf("case 1 failure: %+v", cs[1].Failure)
	}
	if cs[1].Failure != nil && !strings.Contains(cs[1].Failure.Body, "overlap: clients 1 and 2 both held L") {
		t.Errorf("case 1 failure body lacks the evidence: %q", cs[1].Failure.Body)
	}
	if cs[2].Error == nil || cs[2].Name != "broken & <odd>" {
		t.Errorf("case 2: %+v", cs[2])
	}
	md := SummaryMarkdown(cases)
	for _, want := range []string{"3 scenario run(s), 1 as expected, 1 differed, 1 harness error(s)", "| ❌ | differs | **unsafe** | safe |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// chromium finds Debian's chromium (or another Chrome) on this machine.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// headless runs Chromium headless on a file with extra flags and returns
// its stdout and stderr.
func headless(t *testing.T, bin, file string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+file)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errb.String())
	}
	return out.String(), errb.String()
}

// consoleErrors picks the page's console messages and script errors out
// of Chromium's log.
func consoleErrors(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			out = append(out, line)
		}
	}
	return out
}

// TestReportInChromium opens report.html of the recorded redlock-clock-jump
// run in headless Chromium: the rendered DOM has the timeline's SVG with
// its lanes, leases and overlap, the page logs no script error, and a
// screenshot is saved (with -screenshot FILE, for the README).
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium")
	}
	bin := chromium()
	if bin == "" {
		t.Fatal("chromium is not installed: make test installs it (apt-get install -y chromium); the HTML report was not rendered")
	}
	sc, err := scenarios.Find("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	r := writeRun(t, sc, "redlock-clock-jump", sc.Expected)
	page, err := filepath.Abs(filepath.Join(r.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}

	dom, log := headless(t, bin, page, "--dump-dom")
	for _, want := range []string{`<svg xmlns="http://www.w3.org/2000/svg" class="timeline"`, `class="tl-overlap"`, `class="tl-belief"`, `class="tl-hold"`,
		`class="tl-clock"`, "Redis C", "Client 2", "clients 1 and 2 both hold L", `href="history.html"`, `id="history-table"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if errs := consoleErrors(log); len(errs) > 0 {
		t.Errorf("console messages while rendering:\n%s", strings.Join(errs, "\n"))
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	_, log = headless(t, bin, page, "--hide-scrollbars", "--window-size=1400,1800", "--screenshot="+shot)
	if errs := consoleErrors(log); len(errs) > 0 {
		t.Errorf("console messages while taking the screenshot:\n%s", strings.Join(errs, "\n"))
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if len(png) < 20_000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot is %d bytes, not a rendered page", len(png))
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if *screenshot != "" {
		if err := copyFile(shot, *screenshot); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", *screenshot)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func ExampleEventLine() {
	fmt.Println(EventLine(history.Event{Seq: 7, Time: 352e6, Process: 1, Type: history.Ok, Op: "acquire", Nodes: []string{"A", "B", "C"}, Fence: 33}))
	// Output: #7 t=0.352s client 1 acquire ok (nodes A,B,C; fence 33)
}
