package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindingsBadInput: a name --only does not know, a --doc that is not
// Markdown, or a findings.json locksim did not write is one line, exit
// 2, before anything runs.
func TestFindingsBadInput(t *testing.T) {
	dir := t.TempDir()
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "notes.md")
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"mine": true}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"findings", "--only", "redsink"}, "--only redsink: no lock or client program of that name (etcd, "},
		{[]string{"findings", "--doc", filepath.Join(dir, "f.txt")}, "expected a Markdown file (.md)"},
		{[]string{"findings", "--doc", theirs}, "not a findings.json locksim wrote"},
		{[]string{"findings", "--hunt-budget", "0s"}, "--hunt-budget: expected a positive duration"},
	} {
		code, out, errb := sim(t, append(c.args, "--examples", examples, "--out", filepath.Join(t.TempDir(), "runs"))...)
		if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errb, c.want)
		}
	}
}

// TestFindingsOfOneProgram plays sim findings --only on one client program
// (examples/my-lock) into a page of its own: every story of its servers
// is a cell with the command that plays it again, a story the program
// cannot play says why, and the hunt ran.
func TestFindingsOfOneProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "findings.md")
	code, out, errb := sim(t, "findings", "--only", "my-lock", "--examples", examples, "--doc", doc, "--hunt-runs", "2", "--out", filepath.Join(t.TempDir(), "runs"))
	if code != exitOK || !strings.Contains(out, "my-lock") || !strings.Contains(errb, "[########################] ") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| [my-lock](#my-lock) | my-lock: a hand-written Redis lock",
		"| redis-ttl-expiry | ",
		"`bin/sim run redis-unsafe-release --lock redis --client-cmd \"" + filepath.Join(examples, "my-lock", "client.py") + "\"`",
		"| redis-watchdog | n/a: ", // no watchdog in its hello: the cell says why
		"Hunt: `bin/sim hunt redis --client-cmd",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("findings.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"findings.html", "findings.json"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(doc), f)); err != nil {
			t.Error(err)
		}
	}
}
