package findings

import (
	"strings"
	"testing"
)

// TestIssuesMarkdown: a finding the report's runs reproduced says k of
// n, where the lock and its reference part, and how to replay it; one
// they did not reproduce says so first and claims nothing.
func TestIssuesMarkdown(t *testing.T) {
	s := Subject{Name: "lib", About: "lib 1.2.3"}
	got := IssuesMarkdown(s, "bin/sim findings --report lib", []Issue{
		{Title: "lib: a story", K: 3, N: 5, Undecided: []string{"run 2 undecided"}, Expected: "the reference ends `safe`", Happened: "`unsafe`",
			Parted: "at step 4 ...", Command: "bin/sim run x --lock lib --repeat 5", Story: "name: x\n", StoryFile: "scenarios/x.yaml", Versions: []string{"library: lib 1.2.3"}},
		{Title: "lib: another", K: 0, N: 5, Command: "bin/sim run y", Story: "name: y", StoryFile: "scenarios/y.yaml"},
	})
	for _, want := range []string{
		"# Findings about lib\n", "## 1. lib: a story", "- library: lib 1.2.3", "**How often**: 3 of 5 runs ended worse than the reference; undecided: run 2 undecided.",
		"**Where they part**: at step 4 ...", "```\nbin/sim run x --lock lib --repeat 5\n```", "```yaml\nname: x\n```",
		"## 2. lib: another\n\n**Not reproduced**: 0 of 5 runs",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got[:strings.Index(got, "## 2.")], "Not reproduced") {
		t.Errorf("a reproduced finding is marked not reproduced:\n%s", got)
	}
}
