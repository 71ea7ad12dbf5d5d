package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/findings"
)

// TestFindingsUnplayableKeepsItsRow plays the path of a new user whose
// Node.js example has no packages installed: sim findings --only names
// it, says in one line how to install them, exits 2, and leaves the
// page, its row included, byte for byte as it was.
func TestFindingsUnplayableKeepsItsRow(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("needs node")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "examples", "nopkg")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"package.json": `{"name": "nopkg", "version": "1.0.0", "dependencies": {"ioredis": "5.4.1"}}`,
		"client.js":    `require("ioredis");` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(prog, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := filepath.Join(dir, "findings.md")
	r := &findings.Report{Command: "bin/sim findings", Seed: 1, Subjects: []findings.Subject{{
		Name: "nopkg", Lock: "redis", Program: []string{"node", filepath.Join(prog, "client.js")}, About: "nopkg 1.0.0", Servers: "redis", Date: "2026-12-01",
		Cells: []findings.Cell{{Story: "redis-late-release", Kind: "finding", Text: "finding: ended unsafe where redis ended safe"}}}}}
	b := writePage(t, dir, r)
	code, out, errb := sim(t, "findings", "--only", "nopkg", "--examples", filepath.Join(dir, "examples"), "--doc", doc, "--out", filepath.Join(dir, "runs"))
	if code != exitHarness || out != "" || strings.Count(errb, "\n") != 1 || !strings.Contains(errb, "npm ci --prefix "+prog) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming npm ci --prefix %s", code, out, errb, prog)
	}
	after, err := os.ReadFile(filepath.Join(dir, "findings.json"))
	if err != nil || !bytes.Equal(after, b) {
		t.Errorf("the page's .json changed (%v):\n%s", err, after)
	}
	if _, err := os.Stat(doc); !os.IsNotExist(err) {
		t.Errorf("a page was written: %v", err)
	}
}
