// defect_report.go: one report per defect, beside the page
// (docs/findings/SLUG.md), in the shape a library's tracker takes: what
// it promises, what happened, where, how to replay it. Every page write
// writes them anew from the same rows, so no report is older than the
// rows it reports.

package findings

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReportMark opens every defect report locksim writes: WriteDefectReports
// removes such a file when its defect is gone, and never touches another.
const ReportMark = "<!-- a defect report written by locksim findings -->"

// DefectReport is d's report, as docs/findings/SLUG.md holds it.
func (r *Report) DefectReport(d Defect) []byte {
	var b bytes.Buffer
	b.WriteString(ReportMark + "\n")
	fmt.Fprintf(&b, "# %s\n\n", d.Title())
	var rows []Subject
	for _, s := range r.Subjects {
		if slices.ContainsFunc(d.Shown, func(sh Shown) bool { return sh.Subject == s.Name }) {
			rows = append(rows, s)
		}
	}
	whose := d.About
	if d.Writeup != nil {
		whose = d.Writeup.Whose
	}
	fmt.Fprintf(&b, "- **Library:** %s\n", whose)
	for _, s := range rows {
		fmt.Fprintf(&b, "- **Played:** %s (%s), on %s, %s%s\n", s.Name, s.About, s.ServersLine(), s.Date, s.LoadWords())
	}
	if len(rows) > 0 {
		if nl := r.NewestLine(rows[0]); nl != "" {
			fmt.Fprintf(&b, "- **Versions:** %s\n", nl)
		}
	}
	fmt.Fprintf(&b, "- **The promise it breaks:** %s", d.Property.Says())
	if d.Promise.Quote != "" {
		fmt.Fprintf(&b, ": \"%s\" (%s)", d.Promise.Quote, d.Promise.Source)
	}
	b.WriteString("\n")
	if w := d.Writeup; w != nil {
		fmt.Fprintf(&b, "- **Where in its code:** %s\n- **The newest release:** %s\n- **Fix:** %s\n", w.Where, w.Newest, w.Fix)
		if w.Upstream != "" {
			fmt.Fprintf(&b, "- **Upstream:** %s\n", w.Upstream)
		}
		if w.Repro != "" {
			fmt.Fprintf(&b, "- **Standalone reproduction** (the library and the server alone): [%s](%s); run: %s\n", filepath.Base(w.Repro), reproLink(w.Repro), w.Ran)
		}
	} else if d.Stale != "" {
		fmt.Fprintf(&b, "- **Write-up:** not shown: %s.\n", d.Stale)
	} else {
		b.WriteString("- **Write-up:** none yet (docs/findings/defects/).\n")
	}
	if p := d.Replay; p != nil {
		fmt.Fprintf(&b, "- **How often:** %d of %d runs ended worse than the reference; the reference %s itself ended unsafe, leaked or hung in %d of the same %d (`sim findings replay %s`, %s)", p.K, p.N, p.RefLock, p.RefK, p.N, d.Slug(), p.Date)
		if p.Busy() {
			fmt.Fprintf(&b, ", at load %.1f on %d cores: BUSY, its timings are not an idle machine's", p.Load, p.Cores)
		} else {
			fmt.Fprintf(&b, ", at load %.1f on %d cores", p.Load, p.Cores)
		}
		fmt.Fprintf(&b, ". Replay: `%s`\n", p.Command)
		for _, u := range p.Undecided {
			fmt.Fprintf(&b, "  - undecided: %s\n", u)
		}
		if p.Counterfactual != "" {
			fmt.Fprintf(&b, "- **Counterfactual:** %s\n", p.Counterfactual)
		}
	} else {
		fmt.Fprintf(&b, "- **How often:** not replayed yet; `sim findings replay %s` plays its story %d times beside its reference\n", d.Slug(), DefaultReplays)
	}
	b.WriteString("\n## What happened\n\nEach run is judged against locksim's reference for the lock, which keeps the promise and no other, played on the same story and servers.\n\n")
	for _, sh := range d.Shown {
		fmt.Fprintf(&b, "### %s: %s\n\n%s (%s).\n\nReplay: `%s`\n\n", sh.Subject, sh.What, sh.Text, sh.Count, sh.Command)
		if sh.Story != "" {
			fmt.Fprintf(&b, "<details><summary>the story the hunt found</summary>\n\n```yaml\n%s```\n\n</details>\n\n", sh.Story)
		}
	}
	return b.Bytes()
}

// reproLink is a reproduction's address from its report, which lives in
// docs/findings/: "repro/x.js" for "docs/findings/repro/x.js".
func reproLink(path string) string {
	if _, rest, ok := strings.Cut(path, "docs/findings/"); ok {
		return rest
	}
	return path
}

// WriteDefectReports writes every defect's report into dir and removes
// the reports of defects no longer on the page; it returns the files
// written.
func (r *Report) WriteDefectReports(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, d := range r.defects {
		p := filepath.Join(dir, d.Slug()+".md")
		if err := os.WriteFile(p, r.DefectReport(d), 0o644); err != nil {
			return nil, err
		}
		written = append(written, p)
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	for _, p := range old {
		if slices.Contains(written, p) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), ReportMark) {
			if err := os.Remove(p); err != nil {
				return nil, err
			}
		}
	}
	return written, nil
}
