package cli

import (
	"reflect"
	"testing"
)

// TestJobsPassEveryFlagSet: a --jobs run gives each shard every flag the
// user set, as given (a list joined with commas), but the ones it sets
// for the shard itself; a flag left at its default is not passed.
func TestJobsPassEveryFlagSet(t *testing.T) {
	cmd := findingsCmd()
	args := []string{"--only", "redis-lock,node-redlock (redlock)", "--jobs", "2", "--doc", "x/findings.md",
		"--out", "runs/x", "--examples", "", "--hunt-budget", "2m", "--seed", "7"}
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	got := findingsOptions{flags: cmd.Flags()}.passed()
	want := []string{"--only=redis-lock,node-redlock (redlock)", "--examples=", "--hunt-budget=2m0s", "--seed=7"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("passed %q, want %q", got, want)
	}
}
