package main

// matrix.go: `sim matrix`, every story against every lock: which locks
// each story catches, and which stories each lock survives.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"locksim/checker"
	"locksim/clients"
	"locksim/runner"
	"locksim/scenarios"
)

// matrixOptions are sim matrix's flags.
type matrixOptions struct {
	locks          string
	out            string
	seed           int64
	markdown, html string
	quiet          bool
	targets        []string
	// clientCmd runs every client as this program (argv, split on spaces).
	clientCmd string
	// backend says where the servers run.
	backend runner.Backend
}

func (c *cli) matrixCmd() *cobra.Command {
	var o matrixOptions
	cmd := &cobra.Command{
		Use:   "matrix --locks a,b,c [SCENARIO|REGEX...]",
		Short: "every story against every lock of its servers: a lock-by-scenario table",
		Long: `Play each scenario (default: every scripted one) with each lock of --locks
that uses the same servers (the backend sim locks names; the others are
n/a), one run after another, each with its counterfactual where it means
something for that lock, into DIR/<lock>/<scenario> (--out DIR); then print
a table with a row per scenario and a column per lock. A cell says the
verdict and whether it is the one the story expects, and the
counterfactual's verdict; or "story did not happen:" and why (the lock did
not behave as the story tells: a finding, not a failure), or "unknown" (the
machine was too slow for the story), or n/a. With --client-cmd, a story
the client program's hello does not cover (a write to the protected
storage, a fence, a watchdog: docs/protocol.md) is n/a too, and a
counterfactual it does not cover is skipped; the HTML table's cell says why.

Exit codes: 0 every cell ran (verdicts that differ from the story's are
findings, not errors), 2 bad input or a cell the harness could not run,
130 interrupted (the table so far is still printed and written).`,
		Example: `  sim matrix --locks redis,redis-plain-del redis-unsafe-release
  sim matrix --locks redis,redlock 'redlock-.*' --html matrix.html
  sim matrix --locks postgres-session,postgres-xact,postgres-pooled --markdown "$GITHUB_STEP_SUMMARY"`,
		ValidArgsFunction: completeScenarios(func(sc *scenarios.Scenario) bool { return sc.Generator == nil }),
		RunE: c.do(func(_ *cobra.Command, args []string) int {
			o.targets = args
			return cmdMatrix(o, c.stdout, c.stderr)
		}),
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.locks, "locks", "", "the locks to compare, `a,b,c` (sim locks; mutants too)")
	f.StringVar(&o.out, "out", "", "where the runs go, as `DIR`/<lock>/<scenario> (default runs/matrix-<time>)")
	f.Int64Var(&o.seed, "seed", 0, "seed `N` of every run (default: the time)")
	f.StringVar(&o.clientCmd, "client-cmd", "", "run every client as the program `CMD` (split on spaces; docs/protocol.md) instead of locksim's Go worker")
	backendFlags(f, &o.backend)
	f.StringVar(&o.markdown, "markdown", "", "also write the table as Markdown to `FILE` (e.g. \"$GITHUB_STEP_SUMMARY\")")
	f.StringVar(&o.html, "html", "", "also write the table as one self-contained HTML page to `FILE`")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line on stderr after each run")
	cmd.RegisterFlagCompletionFunc("locks", completeLocks)
	return cmd
}

// matrixCell is one lock and one scenario: not applicable, not run, or
// run with its outcome.
type matrixCell struct {
	Lock, Scenario string
	// NA says why the story cannot be told with the lock ("": it can).
	NA string
	// Ran says the run ended with a verdict.
	Ran               bool
	Verdict, Expected string
	// Slow says the verdict is unknown because the machine was too slow.
	Slow bool
	// CF is the counterfactual's verdict ("": none ran), CFFlipped
	// whether it flipped; CFSkipped why it was not played.
	CF        string
	CFFlipped bool
	CFSkipped string
	// Story is how the run contradicted its story; Err a harness failure;
	// Interrupted says the run was cut short.
	Story, Err  string
	Interrupted bool
	// Dir is the run directory; Summary the checkers' sentence.
	Dir, Summary string
	Duration     time.Duration
}

// matrix is the table: the scenarios (rows), the locks (columns), the
// cells by lock and scenario.
type matrix struct {
	Locks     []string
	Scenarios []*scenarios.Scenario
	Cells     map[[2]string]*matrixCell
}

func (m *matrix) cell(lock, scenario string) *matrixCell { return m.Cells[[2]string{lock, scenario}] }

// ordered lists the cells in the order they run: lock by lock, each
// lock's scenarios in turn.
func (m *matrix) ordered() []*matrixCell {
	var out []*matrixCell
	for _, l := range m.Locks {
		for _, sc := range m.Scenarios {
			if c := m.cell(l, sc.Name); c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// checkMatrix checks sim matrix's flags and returns its locks.
func checkMatrix(o *matrixOptions) ([]string, error) {
	if err := checkBackend(o.backend); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.locks) == "" {
		return nil, errors.New("--locks: name the locks to compare, e.g. --locks redis,redlock (sim locks lists them)")
	}
	var locks []string
	for _, l := range strings.Split(o.locks, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if _, err := clients.Lookup(l); err != nil {
			return nil, fmt.Errorf("--locks: unknown lock %q (known: %s)", l, strings.Join(clients.Names(), ", "))
		}
		if !containsString(locks, l) {
			locks = append(locks, l)
		}
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	return locks, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// planMatrix builds the table's cells, each with the story as it runs
// with its lock (nil: n/a). With a client program (program, not nil: why
// it cannot play a story, runner.ClientProgramProblem), a story its hello
// does not cover is n/a, and a counterfactual it does not cover is skipped.
func planMatrix(locks []string, list []*scenarios.Scenario, out string, program func(*scenarios.Scenario) error) (*matrix, map[*matrixCell]variant) {
	m := &matrix{Locks: locks, Scenarios: list, Cells: map[[2]string]*matrixCell{}}
	plays := map[*matrixCell]variant{}
	for _, l := range locks {
		for _, sc := range list {
			c := &matrixCell{Lock: l, Scenario: sc.Name, Expected: sc.Expected, Dir: filepath.Join(out, l, sc.Name)}
			m.Cells[[2]string{l, sc.Name}] = c
			v, err := withLock(sc, l)
			if err == nil && program != nil {
				if err = program(v.sc); err == nil {
					v = withoutCFUnplayable(v, program)
				}
			}
			if err != nil {
				c.NA = err.Error()
				continue
			}
			if sc.Counterfactual == nil && c.CFSkipped == "" {
				c.CFSkipped = "the scenario has none"
			}
			if v.skipCF != "" {
				c.CFSkipped = v.skipCF
			}
			plays[c] = v
		}
	}
	return m, plays
}

// withoutCFUnplayable drops v's counterfactual, saying why, when the
// client program cannot play it (it changes the lock to one the program
// does not implement, say).
func withoutCFUnplayable(v variant, program func(*scenarios.Scenario) error) variant {
	if v.sc.Counterfactual == nil {
		return v
	}
	cfs, err := v.sc.CounterfactualScenario()
	if err == nil {
		err = program(cfs)
	}
	if err != nil {
		cp := *v.sc
		cp.Counterfactual = nil
		v.sc, v.skipCF = &cp, "the client program cannot play it: "+err.Error()
	}
	return v
}

func cmdMatrix(o matrixOptions, stdout, stderr io.Writer) int {
	locks, err := checkMatrix(&o)
	if err != nil {
		return fail(stderr, err)
	}
	var list []*scenarios.Scenario
	if len(o.targets) == 0 {
		all, err := scenarios.Catalogue()
		if err != nil {
			return fail(stderr, err)
		}
		for _, sc := range all {
			if sc.Generator == nil {
				list = append(list, sc)
			}
		}
	} else if list, err = resolveTargets(false, o.targets); err != nil {
		return fail(stderr, err)
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "matrix-"+time.Now().Format("20060102-150405"))
	}
	var program func(*scenarios.Scenario) error
	if argv := strings.Fields(o.clientCmd); len(argv) > 0 {
		hello, err := runner.ProbeClientProgram(context.Background(), argv)
		if err != nil {
			return fail(stderr, err)
		}
		program = func(sc *scenarios.Scenario) error { return runner.ClientProgramProblem(sc, argv, hello) }
	}
	m, plays := planMatrix(locks, list, o.out, program)
	if len(plays) == 0 {
		return fail(stderr, fmt.Errorf("no scenario given can be played with %s: each needs other servers or more nodes (sim list shows each scenario's lock)", strings.Join(locks, ", ")))
	}
	for _, c := range m.ordered() {
		if _, ok := plays[c]; !ok {
			continue
		}
		if err := checkOut(c.Dir); err != nil {
			return fail(stderr, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	total, done := len(plays), 0
	fmt.Fprintf(stderr, "sim matrix: %d run(s) of %d scenario(s) with %d lock(s) (seed %d) into %s\n", total, len(list), len(locks), o.seed, o.out)
	for _, c := range m.ordered() {
		v, ok := plays[c]
		if !ok {
			continue
		}
		if ctx.Err() != nil {
			c.Interrupted = true
			continue
		}
		done++
		playCell(ctx, c, v, o.seed, runner.Options{ClientCmd: strings.Fields(o.clientCmd), Backend: o.backend})
		if !o.quiet && !c.Interrupted {
			fmt.Fprintf(stderr, "[%d/%d] %s with %s: %s (%v)\n", done, total, c.Scenario, c.Lock, c.text(0), c.Duration.Round(100*time.Millisecond))
		}
	}
	printMatrix(stdout, m)
	code := exitOK
	if o.markdown != "" {
		if err := writeFile(o.markdown, []byte(matrixMarkdown(m))); err != nil {
			code = fail(stderr, fmt.Errorf("--markdown: %v", err))
		}
	}
	if o.html != "" {
		var b bytes.Buffer
		err := writeMatrixHTML(&b, m, filepath.Dir(o.html))
		if err == nil {
			err = writeFile(o.html, b.Bytes())
		}
		if err != nil {
			code = fail(stderr, fmt.Errorf("--html: %v", err))
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "sim: interrupted; every server and client was stopped; the runs so far are in %s\n", o.out)
		return exitInterrupted
	}
	for _, c := range m.ordered() {
		if c.Err != "" && code == exitOK {
			code = fail(stderr, fmt.Errorf("not every cell ran: %s with %s: %s", c.Scenario, c.Lock, c.Err))
		}
	}
	return code
}

// playCell plays one cell's story and fills in its outcome.
func playCell(ctx context.Context, c *matrixCell, v variant, seed int64, base runner.Options) {
	started := time.Now()
	base.Out, base.Seed, base.Counterfactual = c.Dir, seed, v.sc.Counterfactual != nil
	res, err := play(ctx, v.sc, base)
	c.Duration = time.Since(started)
	var story *runner.StoryError
	switch {
	case err != nil && ctx.Err() != nil:
		c.Interrupted = true
	case errors.As(err, &story):
		c.Story = fmt.Sprintf("step %d (%s): %s", story.Step, story.Claimed, story.Saw)
	case err != nil:
		c.Err = strings.Join(strings.Fields(err.Error()), " ")
	default:
		c.Ran = true
		c.Verdict, c.Expected, c.Summary = res.Check.Verdict, res.Expected, res.Check.Summary
		c.Slow = res.Check.Verdict == checker.Unknown && res.Machine != nil && res.Machine.Busy != ""
		if cf := res.Counterfactual; cf != nil {
			c.CF, c.CFFlipped = cf.Verdict, cf.Flipped
		}
	}
}

// Cell kinds, for the HTML page's colours and the legend.
const (
	cellMatch   = "match"
	cellDiffers = "differs"
	cellStory   = "story"
	cellUnknown = "unknown"
	cellNA      = "na"
	cellError   = "error"
)

func (c *matrixCell) kind() string {
	switch {
	case c.NA != "":
		return cellNA
	case c.Err != "" || c.Interrupted:
		return cellError
	case c.Story != "":
		return cellStory
	case c.Verdict == checker.Unknown:
		return cellUnknown
	case c.Verdict == c.Expected:
		return cellMatch
	}
	return cellDiffers
}

// text is the cell in words, its reasons cut to width (0: whole).
func (c *matrixCell) text(width int) string {
	cut := func(s string) string {
		if r := []rune(s); width > 0 && len(r) > width {
			return string(r[:width-1]) + "…"
		}
		return s
	}
	switch c.kind() {
	case cellNA:
		return "n/a"
	case cellError:
		if c.Interrupted {
			return "not run (interrupted)"
		}
		return "error: " + cut(c.Err)
	case cellStory:
		return "story did not happen: " + cut(c.Story)
	}
	var s string
	switch c.kind() {
	case cellUnknown:
		s = "unknown"
		if c.Slow {
			s += " (machine too slow)"
		}
	case cellMatch:
		s = c.Verdict + ", as expected"
	default:
		s = c.Verdict + ", NOT " + c.Expected
	}
	return s + c.cfText()
}

// cfText is the counterfactual's part of a cell: "; cf safe".
func (c *matrixCell) cfText() string {
	switch {
	case c.CF != "" && c.CFFlipped:
		return "; cf " + c.CF
	case c.CF != "":
		return "; cf " + c.CF + " (no flip)"
	case strings.HasPrefix(c.CFSkipped, "it changes the lock"):
		return "; cf skipped (it changes the lock)"
	}
	return ""
}

// tally counts the cells by kind, in words.
func (m *matrix) tally() string {
	n := map[string]int{}
	for _, c := range m.Cells {
		n[c.kind()]++
	}
	var parts []string
	for _, k := range []struct{ kind, words string }{
		{cellMatch, "as expected"}, {cellDiffers, "another verdict"}, {cellStory, "story did not happen"},
		{cellUnknown, "unknown"}, {cellError, "not run"}, {cellNA, "n/a"},
	} {
		if n[k.kind] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k.kind], k.words))
		}
	}
	return fmt.Sprintf("%d cell(s): %s", len(m.Cells), strings.Join(parts, ", "))
}

// printMatrix prints the table for a terminal: a row per scenario, a
// column per lock.
func printMatrix(w io.Writer, m *matrix) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "SCENARIO\tEXPECTED")
	for _, l := range m.Locks {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(l))
	}
	fmt.Fprintln(tw)
	for _, sc := range m.Scenarios {
		fmt.Fprintf(tw, "%s\t%s", sc.Name, sc.Expected)
		for _, l := range m.Locks {
			fmt.Fprintf(tw, "\t%s", m.cell(l, sc.Name).text(48))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, m.tally())
}

// matrixMarkdown is the table in Markdown.
func matrixMarkdown(m *matrix) string {
	var b strings.Builder
	b.WriteString("## Lock matrix\n\n")
	b.WriteString("| scenario | expected |")
	for _, l := range m.Locks {
		fmt.Fprintf(&b, " %s |", mdCell(l))
	}
	b.WriteString("\n| --- | --- |")
	b.WriteString(strings.Repeat(" --- |", len(m.Locks)))
	b.WriteString("\n")
	marks := map[string]string{cellMatch: "✅ ", cellDiffers: "❌ ", cellStory: "⚠️ ", cellUnknown: "❔ ", cellError: "💥 ", cellNA: ""}
	for _, sc := range m.Scenarios {
		fmt.Fprintf(&b, "| %s | %s |", mdCell(sc.Name), sc.Expected)
		for _, l := range m.Locks {
			c := m.cell(l, sc.Name)
			fmt.Fprintf(&b, " %s%s |", marks[c.kind()], mdCell(c.text(0)))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%s. A cell: the verdict and whether it is the story's expected one; cf: the counterfactual's verdict.\n", m.tally())
	return b.String()
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// matrixPage is the HTML page: one self-contained file (inline CSS, no
// script, nothing fetched).
var matrixPage = template.Must(template.New("matrix").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>locksim lock matrix</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .35em .6em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.scenario { font-family: ui-monospace, monospace; white-space: nowrap; }
td a { color: inherit; }
.match { background: #e3f4e3; }
.differs { background: #f9d6d5; }
.story { background: #fdf0c8; }
.unknown { background: #e8e8f4; }
.error { background: #f4c7f0; }
.na { color: #999; text-align: center; }
.legend span { display: inline-block; padding: .1em .5em; margin-right: .5em; border: 1px solid #ccc; }
</style>
</head>
<body>
<h1>Lock matrix</h1>
<p>{{.Tally}}. A row per scenario, a column per lock; a cell gives the verdict and whether it is the one the story expects, and the verdict of its counterfactual (cf). Hover a cell for the checkers' sentence; click it for the run's report.</p>
<table>
<tr><th>scenario</th><th>expected</th>{{range .Locks}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="scenario">{{.Name}}</td><td>{{.Expected}}</td>{{range .Cells}}<td class="{{.Kind}}" title="{{.Title}}">{{if .Link}}<a href="{{.Link}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table>
<p class="legend"><span class="match">as expected</span><span class="differs">another verdict</span><span class="story">story did not happen</span><span class="unknown">unknown</span><span class="error">not run</span><span class="na">n/a</span></p>
</body>
</html>
`))

// writeMatrixHTML writes the page; links to each run's report.html are
// relative to dir, where the page goes.
func writeMatrixHTML(w io.Writer, m *matrix, dir string) error {
	type cell struct{ Kind, Text, Title, Link string }
	type row struct {
		Name, Expected string
		Cells          []cell
	}
	page := struct {
		Tally string
		Locks []string
		Rows  []row
	}{Tally: m.tally(), Locks: m.Locks}
	for _, sc := range m.Scenarios {
		r := row{Name: sc.Name, Expected: sc.Expected}
		for _, l := range m.Locks {
			c := m.cell(l, sc.Name)
			hc := cell{Kind: c.kind(), Text: c.text(0), Title: c.Summary}
			switch {
			case c.NA != "":
				hc.Title = c.NA
			case c.CFSkipped != "" && c.Ran:
				hc.Title = strings.TrimSpace(c.Summary + " (counterfactual skipped: " + c.CFSkipped + ")")
			}
			if c.Ran || c.Story != "" {
				report := filepath.Join(c.Dir, "report.html")
				if c.Story != "" {
					report = filepath.Join(c.Dir, "history.jsonl")
				}
				if rel, err := filepath.Rel(absPath(dir), absPath(report)); err == nil {
					hc.Link = filepath.ToSlash(rel)
				}
			}
			r.Cells = append(r.Cells, hc)
		}
		page.Rows = append(page.Rows, r)
	}
	return matrixPage.Execute(w, page)
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
