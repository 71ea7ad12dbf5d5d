package findings

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsThePagesDefects: the README's findings section lists
// every defect docs/findings.md opens with, each linked to its report, and
// none the page does not have: the page decides them, the README copies.
func TestReadmeListsThePagesDefects(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "findings.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defects, _, ok := strings.Cut(string(page), "\n## Libraries")
	if !ok {
		t.Fatal("docs/findings.md has no ## Libraries after its defects")
	}
	link := regexp.MustCompile(`\| \[([^\]]+)\]\(findings/([a-z0-9-]+)\.md\)`)
	onPage := map[string]bool{}
	for _, m := range link.FindAllStringSubmatch(defects, -1) {
		onPage[m[2]] = true
		if want := "[" + m[1] + "](docs/findings/" + m[2] + ".md)"; !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not list the page's defect %s", want)
		}
		if _, err := os.Stat(filepath.Join("..", "docs", "findings", m[2]+".md")); err != nil {
			t.Errorf("the page links %s, which is not there: %v", m[2], err)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(docs/findings/([a-z0-9-]+)\.md\)`).FindAllStringSubmatch(string(readme), -1) {
		if !onPage[m[1]] && strings.Contains(m[0], "-") {
			b, err := os.ReadFile(filepath.Join("..", "docs", "findings", m[1]+".md"))
			switch {
			case err != nil:
				t.Errorf("README.md links the report %s, which is not there: %v", m[1], err)
			case strings.HasPrefix(string(b), ReportMark):
				t.Errorf("README.md lists the defect %s, which the page does not", m[1])
			}
		}
	}
}
