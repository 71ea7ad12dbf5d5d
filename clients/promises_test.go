package clients

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/promise"
)

// TestEveryLockPromisesExclusion: every registered lock that is neither a
// mutant nor a test lock declares its promises (promises.go), each of a
// known property with a quote and a source, none twice, and exclusion
// among them: a story that tests nothing else is counted against every
// lock.
func TestEveryLockPromisesExclusion(t *testing.T) {
	for _, name := range Names() {
		s, _ := Lookup(name)
		if s.Mutant != "" || strings.HasPrefix(name, "test-") {
			continue
		}
		if len(s.Promises) == 0 {
			t.Errorf("%s declares no promises", name)
			continue
		}
		if err := s.Promises.Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, ok := s.Promises.Of(promise.Exclusion, name); !ok {
			t.Errorf("%s does not promise %s", name, promise.Exclusion)
		}
		seen := map[promise.Property]bool{}
		for _, p := range s.Promises {
			if seen[p.Property] {
				t.Errorf("%s promises %s twice", name, p.Property)
			}
			seen[p.Property] = true
			if !strings.HasPrefix(p.Source, "https://") {
				t.Errorf("%s: promise %s: source %q is no address", name, p.Property, p.Source)
			}
		}
	}
}
