package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/findings"
)

// TestFindingsReplayRefusesAnUnknownDefect: a slug the page does not
// list gets one line naming the ones it does, exit 2, and the page as
// it was; --repeat 0 is refused the same way.
func TestFindingsReplayRefusesAnUnknownDefect(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "findings.md")
	r := &findings.Report{Command: "bin/sim findings", Seed: 1, Subjects: []findings.Subject{{
		Name: "redis", Lock: "redis", About: "redis", Servers: "redis", Date: "2026-12-01",
		Cells: []findings.Cell{{Story: "redis-late-release", Kind: "finding", Text: "finding: ended unsafe where redis ended safe"}}}}}
	b := writePage(t, dir, r)
	code, out, errb := sim(t, "findings", "replay", "nope", "--doc", doc, "--out", filepath.Join(dir, "runs"))
	if code != exitHarness || out != "" || strings.Count(errb, "\n") != 1 || !strings.Contains(errb, "nope: the page "+doc+" lists no such defect (expected one of: redis-token-release)") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming redis-token-release", code, out, errb)
	}
	code, _, errb = sim(t, "findings", "replay", "--repeat", "0", "--doc", doc)
	if code != exitHarness || !strings.Contains(errb, "--repeat 0: expected 1 or more") {
		t.Errorf("--repeat 0: exit %d, %q", code, errb)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "findings.json")); err != nil || !bytes.Equal(after, b) {
		t.Errorf("the page's .json changed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("a run directory was made: %v", err)
	}
}

// TestFindingsReplayPlaysTheDefect plays the user's path on real servers:
// a page listing redis-lock's plain-DEL release (as docs/findings.json
// has its row), sim findings replay --repeat 1 plays its story with the
// library and the reference, and the defect's line and report say 1 of
// 1, the reference 0 of 1.
func TestFindingsReplayPlaysTheDefect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node and redis-server")
	}
	page, err := findings.Load(filepath.Join("..", "docs", "findings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sub findings.Subject
	for _, s := range page.Subjects {
		if s.Name == "redis-lock" {
			sub = s
		}
	}
	if sub.Name == "" {
		t.Fatal("docs/findings.json has no redis-lock row")
	}
	prog, err := filepath.Abs(filepath.Join("..", "examples", "redis-lock", "client.js"))
	if err != nil {
		t.Fatal(err)
	}
	sub.Program = []string{"node", prog}
	sub.Cells = []findings.Cell{{Story: "redis-late-release", Kind: "finding", Text: "finding: ended unsafe where redis ended safe"}}
	sub.Hunt = nil
	dir := t.TempDir()
	doc := filepath.Join(dir, "findings.md")
	writePage(t, dir, &findings.Report{Command: "bin/sim findings", Seed: 1, Subjects: []findings.Subject{sub}})
	code, _, errb := sim(t, "findings", "replay", "--repeat", "1", "--doc", doc, "--out", filepath.Join(dir, "runs"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| 1 of 1; the reference redis 0 of 1 (") {
		t.Errorf("the defect's line does not say 1 of 1, the reference 0 of 1:\n%s", md)
	}
	report, err := os.ReadFile(filepath.Join(dir, "findings", "redis-lock-token-release.md"))
	if err != nil || !strings.Contains(string(report), "Replay: `bin/sim run redis-late-release --client-cmd \"node "+prog+"\" --repeat 1`") {
		t.Errorf("the defect's report (%v):\n%s", err, report)
	}
}

// writePage writes r as dir/findings.json, the page a findings command
// reads, and returns its bytes.
func writePage(t *testing.T, dir string, r *findings.Report) []byte {
	t.Helper()
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "findings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}
