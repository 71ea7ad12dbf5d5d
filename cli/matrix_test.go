package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixBadInputExits2: sim matrix refuses bad input in one line,
// before anything starts.
func TestMatrixBadInputExits2(t *testing.T) {
	// A directory holding something locksim did not write is refused, as
	// sim run's --out is (out_test.go tries every command).
	notEmpty := t.TempDir()
	os.MkdirAll(filepath.Join(notEmpty, "redis", "redis-ttl-expiry"), 0o755)
	os.WriteFile(filepath.Join(notEmpty, "redis", "redis-ttl-expiry", "mine.txt"), []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"matrix no locks", []string{"matrix", "redis-ttl-expiry"}, "--locks: name the locks to compare"},
		{"matrix unknown lock", []string{"matrix", "--locks", "redis,chubby"}, `--locks: unknown lock "chubby"`},
		{"matrix unknown scenario", []string{"matrix", "--locks", "redis", "redis-ttl-expiri"}, "did you mean: redis-ttl-expiry"},
		{"matrix nothing to play", []string{"matrix", "--locks", "postgres-session", "redis-ttl-expiry"}, "no scenario given can be played with postgres-session"},
		{"matrix out not empty", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--out", notEmpty}, "holds redis, which locksim did not write"},
		{"matrix bad flag", []string{"matrix", "--locks", "redis", "--colour"}, "flag provided but not defined: --colour"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errb := sim(t, c.args...)
			if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errb, c.want)
			}
		})
	}
}
