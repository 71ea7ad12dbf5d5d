package findings

import (
	"fmt"
	"strings"
)

// Issue is one finding about a subject, as a maintainer's issue tracker
// takes it: every field is what the report's own runs showed
// (sim findings --report), nothing carried over from the page.
type Issue struct {
	// Title is the issue's one line.
	Title string
	// Versions name the library, its drivers, the servers, the
	// language runtime and the OS the runs played.
	Versions []string
	// Expected is what the reference did on the same story; Happened
	// what the subject did.
	Expected, Happened string
	// Story is the story's YAML, StoryFile where it lives (a catalogue
	// file, or the hunt's found.yaml); Program the client program's
	// path ("" for locksim's own lock).
	Story, StoryFile, Program string
	// Command plays it again.
	Command string
	// K of N runs ended worse than the reference; Undecided runs (a
	// machine too busy, a harness failure) count in N and say why.
	K, N      int
	Undecided []string
	// RefK of the N runs the reference RefLock itself ended unsafe or
	// leaked.
	RefK    int
	RefLock string
	// Counterfactual is the story's counterfactual, played with the
	// subject, and what it ended in; "" when the story has none that
	// keeps the subject's lock.
	Counterfactual string
	// Parted is the first step where the subject and the reference part,
	// in the runs' words; "" when no step told apart (only the verdict).
	Parted string
}

// Reproduced says the runs showed the finding at least once.
func (i Issue) Reproduced() bool { return i.K > 0 }

// IssuesMarkdown renders a subject's issues, one section each, under a
// header that names the subject and how they were made.
func IssuesMarkdown(s Subject, made string, issues []Issue) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Findings about %s\n\n", s.Name)
	fmt.Fprintf(&b, "%s. Each section below is one finding, in the shape an issue tracker takes; "+
		"every figure comes from the runs of this report, none from the findings page.\n\n", s.About)
	fmt.Fprintf(&b, "Made by `%s`.\n", made)
	if len(issues) == 0 {
		b.WriteString("\nThe findings page lists no finding about this lock, and its hunt found none.\n")
	}
	for n, i := range issues {
		fmt.Fprintf(&b, "\n## %d. %s\n\n", n+1, i.Title)
		if !i.Reproduced() {
			fmt.Fprintf(&b, "**Not reproduced**: 0 of %d runs ended worse than the reference. Nothing below is claimed as a finding.\n\n", i.N)
		}
		b.WriteString("**Versions**\n\n")
		for _, v := range i.Versions {
			fmt.Fprintf(&b, "- %s\n", v)
		}
		fmt.Fprintf(&b, "\n**Expected** (the reference, on the same story): %s\n\n", i.Expected)
		fmt.Fprintf(&b, "**What happened**: %s\n\n", i.Happened)
		if i.Parted != "" {
			fmt.Fprintf(&b, "**Where they part**: %s\n\n", i.Parted)
		}
		fmt.Fprintf(&b, "**How often**: %d of %d runs ended worse than the reference", i.K, i.N)
		if len(i.Undecided) > 0 {
			fmt.Fprintf(&b, "; undecided: %s", strings.Join(i.Undecided, "; "))
		}
		b.WriteString(".\n\n")
		if i.Counterfactual != "" {
			fmt.Fprintf(&b, "**Counterfactual**: %s\n\n", i.Counterfactual)
		}
		fmt.Fprintf(&b, "**Reproduce** (from a clone of locksim, after `make test-deps`):\n\n```\n%s\n```\n\n", i.Command)
		if i.Program != "" {
			fmt.Fprintf(&b, "The client program: `%s`.\n\n", i.Program)
		}
		fmt.Fprintf(&b, "**The story** (`%s`):\n\n```yaml\n%s\n```\n", i.StoryFile, strings.TrimRight(i.Story, "\n"))
	}
	return b.String()
}
