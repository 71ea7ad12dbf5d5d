package hunt

// write.go: what a hunt leaves in its directory, and the counts it says
// them in: one place for sim hunt and the workshop's hunt page.

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/scenarios"
)

// WriteDir writes what a hunt leaves in dir: hunt.json (res, when not
// nil) and, when it found a story (found, not nil), found.yaml,
// original.yaml and schema.json (for the editor). It returns the path of
// found.yaml, or "" when it wrote none.
func WriteDir(dir *outdir.Dir, res *Result, found, original *Story) (string, error) {
	if res == nil {
		return "", nil
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", err
	}
	if err := dir.WriteFile("hunt.json", append(b, '\n')); err != nil {
		return "", err
	}
	if !res.Found || found == nil {
		return "", nil
	}
	for name, s := range map[string]*Story{"found.yaml": found, "original.yaml": original} {
		if s == nil {
			continue
		}
		if err := dir.WriteFile(name, s.YAML); err != nil {
			return "", err
		}
	}
	if err := dir.WriteFile("schema.json", scenarios.SchemaJSON); err != nil {
		return "", err
	}
	return filepath.Join(dir.Path(), "found.yaml"), nil
}

// Runs says how many candidates the hunt played and the story runs they
// took, in hunt.json's terms ("3 candidate(s) (5 run(s))").
func (r *Result) Runs() string {
	s := fmt.Sprintf("%d candidate(s) (%d run(s))", r.Candidates, r.CandidateRuns)
	if r.HarnessFailures > 0 {
		s += fmt.Sprintf(", %d harness failure(s) played again", r.HarnessFailures)
	}
	return s
}

// Counts is the line of counts under a finding: each of hunt.json's
// counts of story runs by phase, and their sum.
func (r *Result) Counts() string {
	return fmt.Sprintf("after %s in %.0fs; shrunk from %d fault(s) to %d in %d run(s); %s in %d run(s); %d story run(s) in all",
		r.Runs(), r.SecondsToFind, r.FaultsFound, r.FaultsFinal, r.ShrinkRuns, r.ReproducedLine(),
		r.ReproductionRuns, r.StoryRuns)
}

// NotReproduced says, when the shrunk story gave way to another plan
// (FellBack), which one found.yaml is ("" when it did not).
func (r *Result) NotReproduced() string {
	if r.FellBack == "" {
		return ""
	}
	return fmt.Sprintf("the shrunk story did not reproduce as it tells (in %d of %d runs, each by the same path): found.yaml is %s", MustBreak, Plays, r.FellBack)
}

// Unsteady says, of a find's ReproducedLine, that its replays held it
// fewer than MustBreak times: no finding. It reads the line, not a
// Result, for a findings page keeps only the line.
func Unsteady(reproducedLine string) bool {
	var k, n int
	if _, err := fmt.Sscanf(reproducedLine, "reproduced %d of %d", &k, &n); err != nil {
		return false
	}
	return k < MustBreak
}

// ReproducedLine says how many runs of the final story ended unsafe as
// it tells, and how many more by another path.
func (r *Result) ReproducedLine() string {
	s := fmt.Sprintf("reproduced %d of %d", r.Reproduced, r.ReproducedOf)
	if r.OtherWay > 0 {
		s += fmt.Sprintf(" as it tells (%d more unsafe by another path)", r.OtherWay)
	}
	return s
}
