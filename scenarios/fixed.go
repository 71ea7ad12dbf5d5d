package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/locksim/locksim/backends"
)

// validVersion is a server version as fixed_in gives it: "3.5", "3.5.0".
var validVersion = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,2}$`)

// validateFixedIn checks fixed_in: the lock's own servers, which come in
// several versions here, a version, and a story with a bug to fix (one
// that does not end safe).
func (s *Scenario) validateFixedIn() error {
	for b, v := range s.FixedIn {
		_, versioned := s.backend().(backends.Versioned)
		switch {
		case b != string(s.backend().Name()) || !versioned:
			return s.errAt("fixed_in", "%s: expected the lock's servers (%s), and servers that come in several versions here (etcd)", b, s.backend().Name())
		case !validVersion.MatchString(v):
			return s.errAt("fixed_in", "%s: expected a version such as 3.5, got %q", b, v)
		case s.Expected == "safe":
			return s.errAt("fixed_in", "the story ends safe: it has no bug to be fixed")
		}
	}
	return nil
}

// FixedOn says where the story's bug is fixed in the versions its servers
// run (by backend: {"etcd": "3.7.3"}): "etcd 3.5" when one of them is at
// or past its fixed_in; "" when none is.
func (s *Scenario) FixedOn(versions map[string]string) string {
	for b, fixed := range s.FixedIn {
		if v, ok := versions[b]; ok && VersionAtLeast(v, fixed) {
			return b + " " + fixed
		}
	}
	return ""
}

// VersionAtLeast reports whether version v ("3.7.3") is at or past min
// ("3.5"), comparing their numbers in turn; a part v lacks is 0, and a
// part that is not a number (a pre-release's) ends the comparison.
func VersionAtLeast(v, min string) bool {
	vs, ms := strings.Split(v, "."), strings.Split(min, ".")
	for i, m := range ms {
		mn, _ := strconv.Atoi(m)
		vn := 0
		if i < len(vs) {
			n, err := strconv.Atoi(vs[i])
			if err != nil {
				return false
			}
			vn = n
		}
		if vn != mn {
			return vn > mn
		}
	}
	return true
}

// FixedSentence says, for the narration and the verdict, that the run's
// servers have the bug of whose ("story", "counterfactual") fixed: fixed
// is FixedOn's "etcd 3.5", versions the run's servers' (etcd: "3.7.3").
func FixedSentence(whose, fixed string, versions map[string]string) string {
	b, v, _ := strings.Cut(fixed, " ")
	return fmt.Sprintf("the %s's bug is fixed in %s %s+, and this run's %s is %s", whose, b, v, b, versions[b])
}
