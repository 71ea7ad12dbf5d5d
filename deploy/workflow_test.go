package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is the part of GitHub Actions' workflow syntax locksim.yml
// uses, decoded with KnownFields: a key outside it (a typo, or a key at
// the wrong level) fails the test.
type workflow struct {
	Name string         `yaml:"name"`
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		RunsOn   string   `yaml:"runs-on"`
		Timeout  int      `yaml:"timeout-minutes"`
		Needs    yamlList `yaml:"needs"`
		Strategy *struct {
			FailFast *bool            `yaml:"fail-fast"`
			Matrix   map[string][]int `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			Env  map[string]string `yaml:"env"`
			With map[string]any    `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// yamlList is a key that takes one name or a list of names (needs:).
type yamlList []string

func (l *yamlList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = []string{n.Value}
		return nil
	}
	return n.Decode((*[]string)(l))
}

func readWorkflow(t *testing.T) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", "locksim.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("locksim.yml: %v", err)
	}
	return w
}

// TestWorkflow: locksim.yml parses as the workflow syntax it uses; every
// job runs somewhere and each step runs or uses something; needs name
// jobs that exist; the sharded sweeps give sim --shard auto the matrix's
// index and count, each merge needs its shards and publishes the chart in
// the job summary, and the jobs in the locksim image install nothing.
func TestWorkflow(t *testing.T) {
	w := readWorkflow(t)
	for name, j := range w.Jobs {
		if j.RunsOn == "" || len(j.Steps) == 0 || j.Timeout == 0 {
			t.Errorf("job %s: runs-on %q, %d steps, timeout %d", name, j.RunsOn, len(j.Steps), j.Timeout)
		}
		for _, n := range j.Needs {
			if _, ok := w.Jobs[n]; !ok {
				t.Errorf("job %s needs %s, which is no job", name, n)
			}
		}
		for i, s := range j.Steps {
			if (s.Run == "") == (s.Uses == "") {
				t.Errorf("job %s, step %d: want run or uses, one of them", name, i+1)
			}
		}
	}
	for _, tc := range []struct{ shards, merge string }{{"sweep-shards", "sweep-merge"}, {"sweep-shards-in-image", "sweep-merge-in-image"}} {
		shards, ok := w.Jobs[tc.shards]
		if !ok || shards.Strategy == nil || len(shards.Strategy.Matrix["shard"]) < 2 {
			t.Fatalf("job %s: want a matrix of shards", tc.shards)
		}
		n := len(shards.Strategy.Matrix["shard"])
		var play string
		for _, s := range shards.Steps {
			if strings.Contains(s.Run, "--shard auto") {
				play = s.Run + " " + strings.Join(slices.Sorted(mapPairs(s.Env)), " ")
			}
		}
		for _, want := range []string{"--seed", "LOCKSIM_SHARD_INDEX=${{ strategy.job-index }}", "LOCKSIM_SHARDS=${{ strategy.job-total }}"} {
			if !strings.Contains(play, want) {
				t.Errorf("job %s: its --shard auto step has no %s:\n%s", tc.shards, want, play)
			}
		}
		merge := w.Jobs[tc.merge]
		if !slices.Contains(merge.Needs, tc.shards) {
			t.Errorf("job %s: needs %v, want %s", tc.merge, merge.Needs, tc.shards)
		}
		var all string
		for _, s := range merge.Steps {
			all += s.Run + "\n"
		}
		if !strings.Contains(all, "sweep merge") || !strings.Contains(all, ".github/sweep-summary") || !strings.Contains(all, "$GITHUB_STEP_SUMMARY") {
			t.Errorf("job %s: want sim sweep merge and the chart in $GITHUB_STEP_SUMMARY:\n%s", tc.merge, all)
		}
		if strings.Contains(tc.shards, "image") && strings.Count(all, "image-sweep-shard-") != n {
			t.Errorf("job %s: names %d shards, the matrix has %d", tc.merge, strings.Count(all, "image-sweep-shard-"), n)
		}
	}
	for _, name := range []string{"sweep-shards-in-image", "sweep-merge-in-image"} {
		for _, s := range w.Jobs[name].Steps {
			if strings.Contains(s.Run, "apt") || strings.Contains(s.Run, "make ") || strings.Contains(s.Uses, "setup-go") {
				t.Errorf("job %s installs or builds (%q%q): it runs in the locksim image", name, s.Run, s.Uses)
			}
			if strings.Contains(s.Run, "sim ") && !strings.Contains(s.Run, "locksim/sim:bookworm") {
				t.Errorf("job %s runs sim outside the image: %q", name, s.Run)
			}
		}
	}
}

func mapPairs(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k, v := range m {
			if !yield(k + "=" + v) {
				return
			}
		}
	}
}

// TestSweepSummary: the summary script draws one line per lock, over every
// point, and names a point with no decided trial.
func TestSweepSummary(t *testing.T) {
	dir := t.TempDir()
	csv := "lock,param,value,value_per_ttl,ttl,trials,damage_rate\n" +
		"redis,pause,50ms,0.2,250ms,30,0\nredis,pause,750ms,3,250ms,30,0.9\n" +
		"redlock,pause,50ms,0.2,250ms,30,0.1\nredlock,pause,750ms,3,250ms,0,\n"
	if err := os.WriteFile(filepath.Join(dir, "sweep.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join("..", ".github", "sweep-summary"), filepath.Join(dir, "sweep.csv")).CombinedOutput()
	if err != nil {
		t.Fatalf("sweep-summary: %v\n%s", err, out)
	}
	for _, want := range []string{"```mermaid\nxychart-beta", `x-axis "pause" ["0.2ttl", "3ttl"]`, "  line [0, 0.9]\n",
		"  line [0.1, 0]\n", "1. redis 2. redlock", "drawn at 0): redlock@3ttl"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sweep-summary printed no %q:\n%s", want, out)
		}
	}
}
