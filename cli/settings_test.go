package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingOfAnotherBackendExits2: sim run of a PostgreSQL story that
// sets a Redis node's persistence says so in one line, naming the file,
// the line and the field, and exits 2 before any server starts.
func TestSettingOfAnotherBackendExits2(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pg.yaml")
	story := "name: t\ntitle: a test\nlock: postgres-session\nexpected: unsafe\npersistence: always\nsteps:\n  - do: acquire\n    client: 1\n"
	if err := os.WriteFile(file, []byte(story), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code := Execute([]string{"run", file}, strings.NewReader(""), &out, &errs)
	want := "sim: " + file + ":5: persistence: a setting of the servers of the redis or sentinel backend; lock postgres-session runs on one PostgreSQL server"
	if code != exitHarness || !strings.HasPrefix(errs.String(), want) || strings.Count(errs.String(), "\n") != 1 {
		t.Fatalf("exit %d, said %q; want exit 2 and one line starting %q", code, errs.String(), want)
	}
}
