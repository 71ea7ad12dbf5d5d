package findings

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/cellkind"
	"github.com/locksim/locksim/promise"
	"github.com/locksim/locksim/scenarios"
)

// stories finds the catalogue's stories, and two made here: one that
// tests a token-checked release and one that tests renewal, both with a
// fault machines have.
func stories(t *testing.T) StoryFinder {
	t.Helper()
	late, err := scenarios.Find("redis-late-release") // tests: token-release
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) (*scenarios.Scenario, error) {
		switch name {
		case "release-a", "release-b":
			sc := *late
			sc.Name = name
			return &sc, nil
		case "renew":
			sc := *late
			sc.Name, sc.Tests = name, promise.Renewal
			return &sc, nil
		}
		return scenarios.Find(name)
	}
}

var tokenRelease = promise.Promise{Property: promise.TokenRelease, Quote: "deletes the key only if it holds our value", Source: "https://example.org/README.md#release"}
var exclusion = promise.Promise{Property: promise.Exclusion, Quote: "a distributed lock", Source: "https://example.org/README.md"}

func finding(story string) Cell {
	return Cell{Story: story, Kind: cellkind.Finding, Text: "finding: ended unsafe where the reference ended safe", Command: "bin/sim run " + story}
}

// TestJudge: a finding counts only where the lock promises what its
// story tests; one on a property it never promised says "does not
// promise" and is not counted; one whose fault is outside what machines
// have (a 50% fast clock) teaches and is not counted; judging twice says
// it once, and a promise added later makes the cell count again.
func TestJudge(t *testing.T) {
	find := stories(t)
	r := &Report{Subjects: []Subject{{Name: "lib", Lock: "redis", Program: []string{"node", "examples/lib/client.js"},
		Promises: promise.Set{exclusion, tokenRelease},
		Cells:    []Cell{finding("release-a"), finding("renew"), finding("redlock-clock-drift"), {Story: "redis-ttl-expiry", Kind: cellkind.Match, Text: "as its reference"}}}}}
	r.Judge(find)
	r.Judge(find) // written again: said once
	c := r.Subjects[0].Cells
	if c[0].Kind != cellkind.Finding {
		t.Errorf("a promised property's finding: %s %q", c[0].Kind, c[0].Text)
	}
	if c[1].Kind != KindUnpromised || strings.Count(c[1].Text, "not counted") != 1 || !strings.Contains(c[1].Text, "does not promise renewal while the lock is held") {
		t.Errorf("an unpromised property's finding: %s %q", c[1].Kind, c[1].Text)
	}
	if c[2].Kind != KindUnrealistic || strings.Count(c[2].Text, "not counted") != 1 || !strings.Contains(c[2].Text, "ppm") {
		t.Errorf("a 50%% fast clock's finding: %s %q", c[2].Kind, c[2].Text)
	}
	if c[3].Kind != cellkind.Match {
		t.Errorf("a match was judged: %s", c[3].Kind)
	}
	if s := r.Subjects[0]; s.Count(cellkind.Finding) != 1 || !strings.Contains(s.Meaning(), "renew, each testing a property it does not promise") {
		t.Errorf("counted %d; meaning: %s", s.Count(cellkind.Finding), s.Meaning())
	}
	// The library promises renewal after all: the cell counts again.
	r.Subjects[0].Promises = append(r.Subjects[0].Promises, promise.Promise{Property: promise.Renewal, Quote: "renews", Source: "x"})
	r.Judge(find)
	if c := r.Subjects[0].Cells[1]; c.Kind != cellkind.Finding || strings.Contains(c.Text, "not counted") {
		t.Errorf("after the promise: %s %q", c.Kind, c.Text)
	}
	// A cell an earlier locksim judged unrealistic is read back as played.
	old := Cell{Story: "renew", Kind: KindUnrealistic, Text: legacyUnrealistic + "it runs client 1's wall clock at x0.5); finding: ended unsafe"}
	old.restore()
	if old.Kind != cellkind.Finding || old.Text != "finding: ended unsafe" {
		t.Errorf("legacy cell restored as %s %q", old.Kind, old.Text)
	}
}

// TestDefects: two stories that show one broken promise of one library,
// on two of its locks, are one defect; its hunt's find counts under the
// exclusion it promises, as a defect of its own (its shrunk story says no
// other property); a lock that declares no promises has every finding
// shown and none counted.
func TestDefects(t *testing.T) {
	find := stories(t)
	prog := []string{"node", "examples/lib/client.js"}
	r := &Report{Subjects: []Subject{
		{Name: "lib (redis)", Lock: "redis", Program: prog, Promises: promise.Set{exclusion, tokenRelease},
			Cells: []Cell{finding("release-a")},
			Hunt:  &Hunt{Found: true, Baseline: "redis", Reproduced: "reproduced 3 of 3", Command: "bin/sim hunt ...", Story: "name: found\n"}},
		{Name: "lib (redlock)", Lock: "redlock", Program: prog, Promises: promise.Set{exclusion, tokenRelease},
			Cells: []Cell{finding("release-b")}},
		{Name: "quiet", Lock: "redis", Program: []string{"node", "examples/quiet/client.js"},
			Cells: []Cell{finding("release-a")}},
	}}
	r.Judge(find)
	d := r.DefectList()
	if len(d) != 2 {
		t.Fatalf("%d defects, want 2: %+v", len(d), d)
	}
	if d[1].Library != "lib" || d[1].Property != promise.TokenRelease || len(d[1].Shown) != 2 || d[1].Promise.Quote != tokenRelease.Quote {
		t.Errorf("defect: %+v", d[1])
	}
	if d[0].Property != promise.Exclusion || len(d[0].Shown) != 1 || d[0].Shown[0].Count != "reproduced 3 of 3" {
		t.Errorf("the hunt's defect: %+v", d[0])
	}
	if c := r.Subjects[2].Cells[0]; c.Kind != KindUnpromised || !strings.Contains(c.Text, "declares no promises") {
		t.Errorf("a lock with no promises: %s %q", c.Kind, c.Text)
	}
	md := string(r.Markdown())
	if !strings.Contains(md, "## Defects") || strings.Index(md, "## Defects") > strings.Index(md, "## Libraries") {
		t.Error("the page does not open with its defects")
	}
	if !strings.Contains(md, "| [lib: breaks its promise of a release checked against its own token](findings/lib-token-release.md) | [lib](#lib-redis) | a release checked against its own token |") {
		t.Errorf("the defect's line is not on the page:\n%s", md[:min(len(md), 2000)])
	}
}

// TestClientClockHuntTestsTheLeaseClock: a hunt's shrunk story whose only
// fault is the client's own clock stepping back breaks nothing at the
// server, only the client's timing of its lease: it tests a lease timed
// by a monotonic clock, which a library promising exclusion alone does
// not promise, so it is shown and not counted. With a pause too, the
// story is judged by the catalogue's defence for a pause, not the clock.
func TestClientClockHuntTestsTheLeaseClock(t *testing.T) {
	story := func(faults string) string {
		return "name: found\nlock: redis\nttl: 500ms\nexpected: unsafe\nsteps:\n  - do: acquire\n    client: 1\n" + faults + "  - do: acquire\n    client: 2\n"
	}
	jump := "  - do: clock-jump\n    client: 1\n    by: -270ms\n"
	pause := "  - do: pause\n    client: 1\n    for: 600ms\n"
	for _, faults := range []string{jump, jump + pause} {
		r := &Report{Subjects: []Subject{{Name: "lib", Lock: "redis", Program: []string{"node", "examples/lib/client.js"},
			Promises: promise.Set{exclusion},
			Hunt:     &Hunt{Found: true, Baseline: "redis", Reproduced: "reproduced 3 of 3", Command: "bin/sim hunt ...", Story: story(faults)}}}}
		r.Judge(stories(t))
		h := r.Subjects[0].Hunt
		clock := strings.Contains(h.NotCounted, "does not promise a lease timed by a monotonic clock")
		if want := faults == jump; clock != want || len(r.DefectList()) != 0 && want {
			t.Errorf("faults %q: not counted for %q (%d defects); want the monotonic lease: %v", faults, h.NotCounted, len(r.DefectList()), want)
		}
	}
}

// TestLivenessEndOfASafetyStory: a lock that ends leaked or hung on a
// story testing a safety property kept that property; what it broke is a
// release that frees the lock (leaked) or a call's bound (hung), and it
// counts only where the lock promises that. An unsafe end keeps the
// story's own property.
func TestLivenessEndOfASafetyStory(t *testing.T) {
	release := promise.Promise{Property: promise.PromptRelease, Quote: "frees it at once", Source: "x"}
	for _, c := range []struct {
		ended    string
		promises promise.Set
		want     promise.Property
		counted  bool
	}{
		{"unsafe", promise.Set{tokenRelease}, promise.TokenRelease, true},
		{"leaked", promise.Set{tokenRelease}, promise.PromptRelease, false},
		{"leaked", promise.Set{tokenRelease, release}, promise.PromptRelease, true},
		{"hung", promise.Set{tokenRelease, release}, promise.BoundedCalls, false},
	} {
		cell := Cell{Story: "release-a", Kind: cellkind.Finding, Text: "finding: lock lib ended " + c.ended + " where the reference redis ended safe"}
		r := &Report{Subjects: []Subject{{Name: "lib", Lock: "redis", Program: []string{"node", "examples/lib/client.js"}, Promises: c.promises, Cells: []Cell{cell}}}}
		r.Judge(stories(t))
		got := r.Subjects[0].Cells[0]
		if counted := got.Kind == cellkind.Finding; counted != c.counted {
			t.Errorf("ended %s, promises %v: counted %v (%q), want %v", c.ended, c.promises, counted, got.Text, c.counted)
		}
		if !c.counted && !strings.Contains(got.Text, "("+string(c.want)+")") {
			t.Errorf("ended %s: not counted for %q; want %s", c.ended, got.Text, c.want)
		}
		if d := r.DefectList(); c.counted && (len(d) != 1 || d[0].Property != c.want) {
			t.Errorf("ended %s: defects %+v; want one of %s", c.ended, d, c.want)
		}
	}
}
