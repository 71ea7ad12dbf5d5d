package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/outdir"
)

// usersFiles are what a user keeps in a folder, under the names locksim
// writes: none of them may be overwritten.
var usersFiles = map[string]string{"result.json": "mine", "hunt.json": "mine", "sweep.csv": "mine", "notes.txt": "my notes"}

// TestOutRefusesTheUsersFolder: every command that writes a directory (or
// a --junit/--markdown file) refuses, in one line naming it, exit 2 and
// before any server starts, a folder holding the user's files; and
// leaves every file as it was, adding none.
func TestOutRefusesTheUsersFolder(t *testing.T) {
	cases := []struct {
		name string
		// args are the command's, with DIR for the user's folder and NEW
		// for a directory that does not exist yet.
		args []string
		// named is what the one line names ("": DIR).
		named string
	}{
		{"run", []string{"run", "redis-ttl-expiry", "--out", "DIR"}, ""},
		{"run two scenarios", []string{"run", "redis-ttl-expiry", "redlock-clock-jump", "--out", "DIR"}, ""},
		{"run --repeat", []string{"run", "redis-ttl-expiry", "--repeat", "2", "--out", "DIR"}, ""},
		{"matrix", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--out", "DIR"}, ""},
		{"sweep", []string{"sweep", "gen-pause", "--trials", "1", "--out", "DIR"}, ""},
		{"sweep merge", []string{"sweep", "merge", "NEW", "--out", "DIR"}, ""},
		{"hunt", []string{"hunt", "redis", "--runs", "1", "--out", "DIR"}, ""},
		{"hunt merge", []string{"hunt", "merge", "NEW", "--out", "DIR"}, ""},
		{"report", []string{"report", "DIR"}, ""},
		{"run --junit", []string{"run", "redis-ttl-expiry", "--out", "NEW", "--junit", "DIR/notes.txt"}, "--junit DIR/notes.txt"},
		{"run --markdown", []string{"run", "redis-ttl-expiry", "--out", "NEW", "--markdown", "DIR/result.json"}, "--markdown DIR/result.json"},
		{"matrix --html", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--out", "NEW", "--html", "DIR/notes.txt"}, "--html DIR/notes.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir, fresh := filepath.Join(tmp, "mine"), filepath.Join(tmp, "new")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range usersFiles {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			expand := strings.NewReplacer("DIR", dir, "NEW", fresh)
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = expand.Replace(a)
			}
			named := expand.Replace(c.named)
			if named == "" {
				named = dir
			}
			code, stdout, stderr := sim(t, args...)
			if code != exitHarness || stdout != "" || strings.Count(stderr, "\n") != 1 ||
				!strings.Contains(stderr, named+": holds ") || !strings.Contains(stderr, "locksim did not write") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and one line refusing %s", code, stdout, stderr, named)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != len(usersFiles) {
				t.Errorf("%d entries in the folder, want the user's %d", len(entries), len(usersFiles))
			}
			for name, content := range usersFiles {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
					t.Errorf("%s: %q (%v), want %q", name, b, err, content)
				}
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Errorf("a refused command made %s", fresh)
			}
		})
	}
}

// TestRunTwiceIntoOneOut: a run directory locksim made is its own to
// write again: the same --out twice both run, and hold nothing but what
// the marker lists.
func TestRunTwiceIntoOneOut(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	dir := filepath.Join(t.TempDir(), "run")
	for i := 1; i <= 2; i++ {
		code, stdout, stderr := sim(t, "run", "redis-ttl-expiry", "-q", "--out", dir)
		if code == exitHarness || code > exitMismatch {
			t.Fatalf("run %d: exit %d\nstdout %s\nstderr %s", i, code, stdout, stderr)
		}
		if r := readResult(t, dir); r["scenario"] != "redis-ttl-expiry" {
			t.Fatalf("run %d: result.json names %v", i, r["scenario"])
		}
	}
	if err := outdir.Check(dir, outdir.Run); err != nil {
		t.Fatalf("after two runs: %v", err)
	}
}
