package findings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/promise"
)

// TestReplayIsTheDefectsKOfN: a defect's replay is found by its slug, is
// shown on its line and in its report, picks a told story over a hunt,
// survives the page's JSON, and a defect never replayed says how to.
func TestReplayIsTheDefectsKOfN(t *testing.T) {
	find := stories(t)
	prog := []string{"node", "examples/lib/client.js"}
	r := &Report{WrittenBy: WrittenBy, Subjects: []Subject{
		{Name: "lib", Lock: "redis", Program: prog, Promises: promise.Set{exclusion, tokenRelease},
			Cells: []Cell{finding("release-a")},
			Hunt:  &Hunt{Found: true, Baseline: "redis", Reproduced: "reproduced 3 of 3", Command: "bin/sim hunt ...", Story: "name: found\n"}},
	}}
	r.SetReplay(Replay{Slug: "lib-token-release", Command: "bin/sim run release-a --repeat 5", N: 5, K: 1, RefLock: "redis", Date: "2026-12-01", Load: 0.3, Cores: 2})
	r.SetReplay(Replay{Slug: "lib-token-release", Command: "bin/sim run release-a --repeat 5", N: 5, K: 4, RefLock: "redis", RefK: 1, Date: "2026-12-07", Load: 0.4, Cores: 2})
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "findings.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	back.Judge(find)
	var tok, excl *Defect
	for _, d := range back.DefectList() {
		switch d.Property {
		case promise.TokenRelease:
			tok = &d
		case promise.Exclusion:
			excl = &d
		}
	}
	if tok == nil || excl == nil {
		t.Fatalf("defects: %+v", back.DefectList())
	}
	if want := "4 of 5; the reference redis 1 of 5 (2026-12-07, load 0.4 on 2 cores)"; tok.KOfN() != want {
		t.Errorf("k of n: %q, want %q (the second replay in place of the first)", tok.KOfN(), want)
	}
	if excl.KOfN() != "not replayed: sim findings replay lib-exclusion" {
		t.Errorf("a defect never replayed: %q", excl.KOfN())
	}
	if sh := excl.Replayed(); sh.StoryName != "" || sh.Story == "" {
		t.Errorf("a hunt-only defect replays its hunt's story: %+v", sh)
	}
	if sh := tok.Replayed(); sh.StoryName != "release-a" {
		t.Errorf("a told story is replayed: %+v", sh)
	}
	if md := string(back.Markdown()); !strings.Contains(md, "| 4 of 5; the reference redis 1 of 5 (2026-12-07, load 0.4 on 2 cores) |") {
		t.Error("the defect's line does not show its k of n")
	}
	if rep := string(back.DefectReport(*tok)); !strings.Contains(rep, "**How often:** 4 of 5 runs ended worse than the reference; the reference redis itself ended unsafe, leaked or hung in 1 of the same 5") {
		t.Errorf("the report does not say how often:\n%s", rep)
	}
}
