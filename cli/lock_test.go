package cli

import (
	"strings"
	"testing"
)

// TestRunLockBadInputExits2: --lock refuses bad input in one line, before
// anything starts.
func TestRunLockBadInputExits2(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"other backend", []string{"run", "redis-ttl-expiry", "--lock", "postgres-session"}, "sim: scenario redis-ttl-expiry uses a redis lock; postgres-session is a postgres lock\n"},
		{"unknown lock", []string{"run", "redis-ttl-expiry", "--lock", "chubby"}, `--lock: unknown lock "chubby"`},
		{"too few nodes", []string{"run", "redlock-clock-jump", "--lock", "redis"}, "names node"},
		{"family", []string{"run", "--all", "--lock", "redis"}, "sim matrix --locks redis runs only the stories it can play"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errb := sim(t, c.args...)
			if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errb, c.want)
			}
		})
	}
}
