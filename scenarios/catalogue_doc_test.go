package scenarios

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCatalogueDocListsEveryStory: docs/catalogue.md's table has a row
// for every story of the catalogue, with its lock and expected verdict,
// and none for a story that is not there (a story added without its row
// once went unlisted).
func TestCatalogueDocListsEveryStory(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "docs", "catalogue.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 5 || strings.HasPrefix(line, "| scenario ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		rows[strings.TrimPrefix(cells[0], "| ")] = cells
	}
	for _, sc := range all {
		r, ok := rows[sc.Name]
		if !ok {
			t.Errorf("docs/catalogue.md: no row for %s", sc.Name)
			continue
		}
		if r[1] != sc.Lock || !strings.HasPrefix(r[3], string(sc.Expected)) {
			t.Errorf("docs/catalogue.md: %s's row says lock %q, expected %q; the story: %s, %s", sc.Name, r[1], r[3], sc.Lock, sc.Expected)
		}
		delete(rows, sc.Name)
	}
	for name := range rows {
		t.Errorf("docs/catalogue.md: a row for %s, which is no story of the catalogue", name)
	}
}

// TestReadmeCountsTheStories: where the README gives the catalogue's
// size ("the catalogue: N stories", "the N stories"), N is the
// catalogue's (it said 71 when there were 84).
func TestReadmeCountsTheStories(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`the (?:catalogue: )?(\d+) stories`).FindAllStringSubmatch(string(b), -1)
	if len(counts) == 0 {
		t.Fatal("README.md gives the catalogue's size nowhere (\"the N stories\"): the test reads nothing")
	}
	for _, m := range counts {
		if n, _ := strconv.Atoi(m[1]); n != len(all) {
			t.Errorf("README.md: %q; the catalogue has %d", m[0], len(all))
		}
	}
}
