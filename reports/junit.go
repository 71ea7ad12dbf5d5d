// junit.go writes what CI pages read about a batch of runs: JUnit XML (one
// test case per scenario run) and a Markdown summary table fit for
// $GITHUB_STEP_SUMMARY.

package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locksim/locksim/runner"
)

// Case is one scenario run of a batch: a finished run, or the harness
// error that stopped it.
type Case struct {
	// Name is the scenario's name.
	Name string
	// Run is the finished run; nil when Err is set.
	Run *runner.Outcome
	// Err is a failure of the harness itself (not a verdict).
	Err error
	// Duration is the wall time the case took.
	Duration time.Duration
}

// Failed says the verdict differed from the expected one.
func (c Case) Failed() bool { return c.Err == nil && c.Run != nil && !c.Run.Matches() }

// Errored says the harness failed.
func (c Case) Errored() bool { return c.Err != nil || c.Run == nil }

// JUnit XML, in the shape Jenkins, GitLab and the GitHub test-report
// actions read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the cases as one JUnit test suite named locksim.
func WriteJUnit(w io.Writer, cases []Case) error {
	suite := junitSuite{Name: "locksim", Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05")}
	var total time.Duration
	for _, c := range cases {
		total += c.Duration
		jc := junitCase{ClassName: "locksim", Name: c.Name, Time: fmt.Sprintf("%.3f", c.Duration.Seconds())}
		switch {
		case c.Errored():
			suite.Errors++
			msg := "harness error"
			if c.Err != nil {
				msg = c.Err.Error()
			}
			jc.Error = &junitProblem{Message: msg, Type: "harness", Body: msg}
		case c.Failed():
			suite.Failures++
			r := c.Run
			jc.Failure = &junitProblem{
				Type:    "verdict",
				Message: fmt.Sprintf("verdict %s, expected %s: %s", r.Check.Verdict, r.Expected, r.Check.Summary),
				Body:    caseText(r),
			}
			if cf := r.Counterfactual; r.Check.Verdict == r.Expected && cf != nil && !cf.Flipped {
				jc.Failure.Type = "counterfactual"
				jc.Failure.Message = cf.Sentence() + ": " + cf.Summary
			}
		}
		if c.Run != nil {
			jc.SystemOut = caseText(c.Run)
		}
		suite.Cases = append(suite.Cases, jc)
	}
	suite.Tests = len(cases)
	suite.Time = fmt.Sprintf("%.3f", total.Seconds())
	doc := junitSuites{Name: "locksim", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// caseText is a run's verdict, evidence and files as plain text.
func caseText(r *runner.Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\nverdict %s, expected %s; %d violation(s); seed %d\n", r.Scenario.Name, r.Check.Summary, r.Check.Verdict, r.Expected, r.Check.Violations, r.Seed)
	if cf := r.Counterfactual; cf != nil {
		fmt.Fprintf(&b, "%s: %s\n", cf.Sentence(), cf.Summary)
	}
	if lines := EvidenceLines(r.Check); len(lines) > 0 {
		b.WriteString("evidence:\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "run directory: %s (report.html, timeline.svg, history.jsonl)\n", r.Dir)
	}
	return b.String()
}

// SummaryMarkdown is a table of a batch of runs, fit for a CI job page
// ($GITHUB_STEP_SUMMARY).
func SummaryMarkdown(cases []Case) string {
	var ok, failed, errored int
	for _, c := range cases {
		switch {
		case c.Errored():
			errored++
		case c.Failed():
			failed++
		default:
			ok++
		}
	}
	var b strings.Builder
	mark := "✅"
	if failed+errored > 0 {
		mark = "❌"
	}
	fmt.Fprintf(&b, "## %s locksim: %d scenario run(s), %d as expected, %d differed, %d harness error(s)\n\n", mark, len(cases), ok, failed, errored)
	b.WriteString("| | scenario | verdict | expected | violations | time | why | report |\n|---|---|---|---|---:|---:|---|---|\n")
	for _, c := range cases {
		if c.Errored() {
			msg := "harness error"
			if c.Err != nil {
				msg = c.Err.Error()
			}
			fmt.Fprintf(&b, "| 💥 | %s | error | | | %.1fs | %s | |\n", mdEscape(c.Name), c.Duration.Seconds(), mdEscape(msg))
			continue
		}
		r := c.Run
		m := "✅"
		if !r.Matches() {
			m = "❌"
		}
		fmt.Fprintf(&b, "| %s | %s | **%s** | %s | %d | %.1fs | %s | `%s` |\n", m, mdEscape(c.Name), r.Check.Verdict, r.Expected,
			r.Check.Violations, r.Duration.Seconds(), mdEscape(r.Check.Summary), strings.ReplaceAll(r.Dir, "`", "'")+"/report.html")
	}
	b.WriteString("\nEach run directory holds report.html (verdict, evidence, timeline), history.jsonl and result.json; `sim report DIR` rebuilds the reports, `sim check DIR` re-checks the history.\n")
	return b.String()
}
