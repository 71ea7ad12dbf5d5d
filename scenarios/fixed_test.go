package scenarios

import (
	"strings"
	"testing"
)

// TestVersionAtLeast: versions compare number by number, a missing part
// is 0, and a pre-release part is not past anything.
func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		want   bool
	}{
		{"3.4.23", "3.5", false}, {"3.5.0", "3.5", true}, {"3.6.17", "3.5", true}, {"3.7.3", "3.5", true},
		{"3.10.0", "3.5", true}, {"4.0", "3.5", true}, {"3", "3.5", false}, {"3.5", "3.5.1", false}, {"3.5.0-rc", "3.5.0", false},
	} {
		if got := VersionAtLeast(c.v, c.min); got != c.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.want)
		}
	}
}

// TestFixedIn: a story fixed in a later server version says so on that
// version and past it, never before; fixed_in is refused for servers of
// one version, a malformed version, and a story that ends safe.
func TestFixedIn(t *testing.T) {
	sc, err := Find("etcd-lock-service-expired-waiter")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{"3.4.23": "", "3.6.17": "etcd 3.5", "3.7.3": "etcd 3.5"} {
		if got := sc.FixedOn(map[string]string{"etcd": v}); got != want {
			t.Errorf("FixedOn(etcd %s) = %q, want %q", v, got, want)
		}
	}
	if cf, _ := sc.CounterfactualScenario(); cf == nil || cf.FixedOn(map[string]string{"etcd": "3.7.3"}) != "" {
		t.Errorf("the counterfactual has no bug to be fixed: %v", cf)
	}
	story := `name: f
lock: %s
expected: unsafe
%s
steps:
  - do: acquire
    client: 1
  - do: pause
    client: 1
    for: 1s
    cause: true
`
	cf := "counterfactual:\n  change: without the pause\n"
	for _, c := range []struct{ lock, fixed, want string }{
		{"redis", "fixed_in: {redis: \"7.2\"}\n" + cf, "expected the lock's servers (redis), and servers that come in several versions here"},
		{"etcd", "fixed_in: {redis: \"7.2\"}\n" + cf, "redis: expected the lock's servers (etcd)"},
		{"etcd", "fixed_in: {etcd: \"3.5 or so\"}\n" + cf, `expected a version such as 3.5, got "3.5 or so"`},
		{"etcd", "fixed_in: {etcd: \"3.5\"}\n", ""}, // no counterfactual needed
		{"etcd", "fixed_in: {etcd: \"3.5\"}\nexpected: safe\n", "the story ends safe: it has no bug to be fixed"},
	} {
		text := strings.Replace(strings.Replace(story, "%s", c.lock, 1), "%s", c.fixed, 1)
		if !strings.Contains(c.fixed, "counterfactual") {
			text = strings.Replace(text, "    cause: true\n", "", 1)
		}
		if strings.Contains(c.fixed, "expected: safe") {
			text = strings.Replace(text, "expected: unsafe\n", "", 1)
		}
		_, err := Parse("f.yaml", []byte(text))
		if c.want == "" {
			if err != nil {
				t.Errorf("lock %s, %q: %v", c.lock, c.fixed, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("lock %s, %q: %v, want %q", c.lock, c.fixed, err, c.want)
		}
	}
}

// TestFixedSentence: the sentence names whose bug, the version that fixed
// it and the run's own version of that server.
func TestFixedSentence(t *testing.T) {
	versions := map[string]string{"etcd": "3.7.3", "zookeeper": "3.8.4"}
	for whose, want := range map[string]string{
		"story":          "the story's bug is fixed in etcd 3.5+, and this run's etcd is 3.7.3",
		"counterfactual": "the counterfactual's bug is fixed in etcd 3.5+, and this run's etcd is 3.7.3",
	} {
		if got := FixedSentence(whose, "etcd 3.5", versions); got != want {
			t.Errorf("%s: %q, want %q", whose, got, want)
		}
	}
}
