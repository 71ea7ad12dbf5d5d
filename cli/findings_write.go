package cli

// findings_write.go: writing the findings page: every subject judged,
// its hunts named, its defects' write-ups and reports beside it.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/scenarios"
)

// pageBase checks --doc, the findings page a command writes: a Markdown
// file whose .md and .html locksim may write over (outdir.CheckFile), and
// returns its path without .md, which its .html and .json share.
func pageBase(doc string) (string, error) {
	if !strings.HasSuffix(doc, ".md") {
		return "", fmt.Errorf("--doc %s: expected a Markdown file (.md); its .html and .json are written beside it", doc)
	}
	base := strings.TrimSuffix(doc, ".md")
	for _, p := range []string{doc, base + ".html"} {
		if err := outdir.CheckFile(p); err != nil {
			return "", asFlag("--doc", err)
		}
	}
	return base, nil
}

// playedPage is the page --doc's .json holds, and its base (the path
// less .md), refused when sim findings has not written it yet.
func playedPage(doc string) (string, *findings.Report, error) {
	base, err := pageBase(doc)
	if err != nil {
		return "", nil, err
	}
	report, err := findings.Load(base + ".json")
	if err != nil {
		return "", nil, asFlag("--doc", err)
	}
	if len(report.Subjects) == 0 {
		return "", nil, fmt.Errorf("--doc %s: %s.json lists no lock: sim findings writes it first", doc, base)
	}
	return base, report, nil
}

// writeFindings writes the report's Markdown, HTML and JSON, every
// subject's cells judged (judge: findings.Report.Judge).
func writeFindings(r *findings.Report, doc, base string, stdout io.Writer) error {
	unsteadyHunts(r)
	judge(r)
	if err := tellers(r); err != nil {
		return err
	}
	// Each defect's write-up, checked by hand, and its report, written
	// anew with the page: docs/findings/defects/*.yaml and
	// docs/findings/SLUG.md beside docs/findings.md.
	reports := filepath.Join(filepath.Dir(doc), "findings")
	ws, err := findings.LoadWriteups(filepath.Join(reports, "defects"))
	if err != nil {
		return err
	}
	r.Attach(ws)
	newest, err := findings.LoadNewest(filepath.Join(reports, "newest.yaml"))
	if err != nil {
		return err
	}
	r.SetNewest(newest)
	if _, err := r.WriteDefectReports(reports); err != nil {
		return fmt.Errorf("--doc: %v", err)
	}
	if err := writeOutFile("--doc", doc, r.Markdown()); err != nil {
		return err
	}
	h, err := r.HTML()
	if err != nil {
		return err
	}
	if err := writeOutFile("--doc", base+".html", h); err != nil {
		return err
	}
	j, err := r.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", j, 0o644); err != nil {
		return fmt.Errorf("--doc: %v", err)
	}
	for _, s := range r.Subjects {
		fmt.Fprintf(stdout, "%-32s %2d stories, %d worse than its reference; hunt: %s\n", s.Name, len(s.Cells), s.Count("finding"), s.Hunt.Word(true))
	}
	fmt.Fprintf(stdout, "written: %s, %s.html, %s.json\n", doc, base, base)
	return nil
}

// tellers names, for every hunt of the report with no baseline that
// found a story other than a trap, the catalogue story whose schedule it
// is (findings.Hunt.ToldBy), or says none tells it (Untold), refreshed
// or not: the page names a reference lock's find by the story a reader
// can play.
func tellers(r *findings.Report) error {
	catalogue, err := scenarios.Catalogue()
	if err != nil {
		return err
	}
	for i := range r.Subjects {
		h := r.Subjects[i].Hunt
		if h == nil || !h.Found || h.Baseline != "" || h.Trap != "" || h.Story == "" {
			continue
		}
		found, err := scenarios.Parse("found.yaml", []byte(h.Story))
		if err != nil {
			continue // a story this locksim no longer reads: left as it was
		}
		h.ToldBy = scenarios.TellerOf(found.FaultShape(), found.Expected, r.Subjects[i].Lock, catalogue)
		h.Untold = h.ToldBy == ""
	}
	return nil
}

// judge refreshes each registered lock's promises from its Spec (the
// binary's own words for them) and judges every subject's cells and hunt
// (findings.Report.Judge), refreshed or not. A cell's story is the
// catalogue's, or one its program's folder keeps (programStories).
func judge(r *findings.Report) {
	own := map[string]*scenarios.Scenario{}
	for i := range r.Subjects {
		s := &r.Subjects[i]
		if s.Program != nil { // a program's promises are its hello's, as last played
			stories, _ := programStories(s.Program) // a folder gone: its cells are judged by the catalogue alone
			for _, sc := range stories {
				own[sc.Name] = sc
			}
			continue
		}
		if spec, err := clients.Lookup(s.Lock); err == nil {
			s.Promises = spec.Promises
		}
	}
	r.Judge(func(name string) (*scenarios.Scenario, error) {
		if sc, ok := own[name]; ok {
			return sc, nil
		}
		return scenarios.Find(name)
	})
}

// unsteadyHunts makes a hunt's find whose replays did not hold it
// (hunt.Unsteady: "reproduced 0 of 3") a hunt that found nothing, saying
// so, in every subject, refreshed or not: sim hunt itself calls it "a
// violation this machine's timing gives now and then".
func unsteadyHunts(r *findings.Report) {
	for i := range r.Subjects {
		h := r.Subjects[i].Hunt
		if h == nil || !h.Found || !hunt.Unsteady(h.Reproduced) {
			continue
		}
		h.Unsteady = h.Reproduced + ": " + h.Summary
		h.Found, h.Summary, h.Reproduced, h.Story, h.Trap, h.Schedule, h.ToldBy, h.Untold = false, "", "", "", "", "", "", false
	}
}
