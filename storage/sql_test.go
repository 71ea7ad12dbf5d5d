package storage

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bound is a value a driver binds: $1 or $fence (pgx, pg, the page), %s
// (psycopg2), ? (JDBC), or the job 'counter' a client writes inline.
var bound = regexp.MustCompile(`\$[0-9a-z]+|%s|\?|'counter'`)

// normal is a statement with every bound value as ?.
func normal(sql string) string { return bound.ReplaceAllString(sql, "?") }

// TestStorageSQLWrittenOnce: the protected storage's SQL lives in
// sql.go; the page that states the contract (docs/protocol.md) and every
// example client that writes the storage send the same statements, up
// to how their driver binds values. A statement changed in one copy only
// fails here, naming the copy.
func TestStorageSQLWrittenOnce(t *testing.T) {
	copies := map[string]string{
		"docs/protocol.md":                       "../docs/protocol.md",
		"examples/node-common/locksim.js":        "../examples/node-common/locksim.js",
		"examples/pyworker/locksim_worker.py":    "../examples/pyworker/locksim_worker.py",
		"examples/zookeeper-writelock (Storage)": "../examples/zookeeper-writelock/src/locksim/writelock/Storage.java",
	}
	for name, path := range copies {
		b, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			t.Fatal(err)
		}
		text := normal(string(b))
		for _, sql := range ClientSQL {
			if !strings.Contains(text, normal(sql)) {
				t.Errorf("%s does not send %q (sql.go)", name, sql)
			}
		}
	}
	page, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```sql\n"+Schema+"\n```") {
		t.Errorf("docs/protocol.md's schema is not sql.go's Schema:\n%s", Schema)
	}
}

// TestNormalCatchesADrift: the comparison is not so loose that a changed
// statement passes.
func TestNormalCatchesADrift(t *testing.T) {
	if normal(SQLFencedWrite) == normal(`UPDATE counter SET value = $1, fence = $2 WHERE id = 1 AND fence < $2`) {
		t.Error("a fence check of < instead of <= passes as the same statement")
	}
	if normal("UPDATE counter SET value = %s, fence = %s WHERE id = 1 AND fence <= %s") != normal(SQLFencedWrite) {
		t.Error("psycopg2's form of the fenced write is not the same statement")
	}
}
