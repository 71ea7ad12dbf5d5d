package env

import (
	"regexp"
	"testing"
)

// TestServerVersions: each installed server's version is read from its
// binary as a dotted number (make test-deps installs them all).
func TestServerVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs the servers installed")
	}
	dotted := regexp.MustCompile(`^\d+(\.\d+)+`)
	for name, v := range map[string]func() string{"redis": RedisVersion, "postgres": PostgresVersion, "pgbouncer": PgbouncerVersion, "zookeeper": ZooKeeperVersion} {
		if got := v(); !dotted.MatchString(got) {
			t.Errorf("%s version %q, want a dotted version number", name, got)
		}
	}
}
