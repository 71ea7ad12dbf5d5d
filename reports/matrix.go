// matrix.go draws sim matrix's table (package matrix): for a terminal,
// in Markdown (for CI pages) and as one self-contained HTML page.

package reports

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/outdir"
)

// MatrixTable prints the table for a terminal: a row per scenario, a
// column per lock, each cell's reasons cut to fit, and the tally.
func MatrixTable(w io.Writer, m *matrix.Matrix) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "SCENARIO\tEXPECTED")
	for _, l := range m.Locks {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(l))
	}
	fmt.Fprintln(tw)
	for _, sc := range m.Scenarios {
		fmt.Fprintf(tw, "%s\t%s", sc.Name, sc.Expected)
		for _, l := range m.Locks {
			fmt.Fprintf(tw, "\t%s", m.Cell(l, sc.Name).Text(48))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, m.Tally())
}

// MatrixMarkdown is the table in Markdown.
func MatrixMarkdown(m *matrix.Matrix) string {
	var b strings.Builder
	b.WriteString("## Lock matrix\n\n")
	b.WriteString("| scenario | expected |")
	for _, l := range m.Locks {
		fmt.Fprintf(&b, " %s |", mdCell(l))
	}
	b.WriteString("\n| --- | --- |")
	b.WriteString(strings.Repeat(" --- |", len(m.Locks)))
	b.WriteString("\n")
	for _, sc := range m.Scenarios {
		fmt.Fprintf(&b, "| %s | %s |", mdCell(sc.Name), sc.Expected)
		for _, l := range m.Locks {
			c := m.Cell(l, sc.Name)
			fmt.Fprintf(&b, " %s%s |", cellkind.Marks[c.Kind()], mdCell(c.Text(0)))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%s. A cell: the verdict and whether it is the story's expected one; cf: the counterfactual's verdict.\n", m.Tally())
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
var matrixPage = template.Must(template.New("matrix").Funcs(template.FuncMap{"cellCSS": func() template.CSS { return cellkind.CSS }}).Parse(`<!DOCTYPE html>
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
{{cellCSS}}
.na { text-align: center; }
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
<p class="legend">{{range .Legend}}<span class="{{.Kind}}">{{.Words}}</span>{{end}}</p>
</body>
</html>
`))

// WriteMatrixHTML writes the page; links to each run's report.html are
// relative to dir, where the page goes.
func WriteMatrixHTML(w io.Writer, m *matrix.Matrix, dir string) error {
	type cell struct{ Kind, Text, Title, Link string }
	type row struct {
		Name     string
		Expected checker.Verdict
		Cells    []cell
	}
	page := struct {
		Tally  string
		Locks  []string
		Rows   []row
		Legend []struct{ Kind, Words string }
	}{Tally: m.Tally(), Locks: m.Locks, Legend: matrix.Kinds}
	for _, sc := range m.Scenarios {
		r := row{Name: sc.Name, Expected: sc.Expected}
		for _, l := range m.Locks {
			c := m.Cell(l, sc.Name)
			hc := cell{Kind: c.Kind(), Text: c.Text(0), Title: c.Summary}
			switch {
			case c.NA != "":
				hc.Title = c.NA
			case c.CFSkipped != "" && c.Ran:
				hc.Title = strings.TrimSpace(c.Summary + " (counterfactual skipped: " + c.CFSkipped + ")")
			}
			if c.Ran || c.Story != "" {
				report := filepath.Join(c.Dir, "report.html")
				if c.Story != "" {
					report = filepath.Join(c.Dir, outdir.HistoryFile)
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
