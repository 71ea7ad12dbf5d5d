package cli

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/scenarios"
)

// TestIdleFlagsRefused: a flag given where it has no effect is refused
// before anything starts: exit 2, one line naming the flag and why.
func TestIdleFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"points without param", []string{"sweep", "gen-pause", "--points", "4", "--trials", "4"}, "--points has no effect without --param"},
		{"seed on a story", []string{"run", "redlock-clock-jump", "--seed", "1"}, "--seed has no effect on scripted stories"},
		{"quiet workshop", []string{"run", "redlock-clock-jump", "--step", "-q"}, "--quiet (-q) has no effect with --step"},
		{"step on a generator", []string{"run", "gen-pause", "--step"}, "--step has no effect on gen-pause, a generator scenario"},
		{"seed on a matrix of stories", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--seed", "7"}, "--seed has no effect on scripted stories"},
		{"image of a local run", []string{"run", "redlock-clock-jump", "--redis-image", "redis:7"}, "--redis-image has no effect without --backend docker"},
		{"image of a local matrix", []string{"matrix", "--locks", "redis", "redis-ttl-expiry", "--redis-image", "redis:7"}, "--redis-image has no effect without --backend docker"},
		{"image of a local sweep", []string{"sweep", "gen-pause", "--param", "pause=0.2ttl..3ttl", "--redis-image", "redis:7"}, "--redis-image has no effect without --backend docker"},
		{"image of a local hunt", []string{"hunt", "redis", "--redis-image", "redis:7"}, "--redis-image has no effect without --backend docker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errb := sim(t, c.args...)
			if code != exitHarness || !strings.HasPrefix(errb, "sim: "+c.want) || strings.Count(errb, "\n") != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", code, out, errb, c.want)
			}
		})
	}
}

// TestIdleFlagsAccepted: the same flags where they do something pass.
func TestIdleFlagsAccepted(t *testing.T) {
	find := func(names ...string) []*scenarios.Scenario {
		var list []*scenarios.Scenario
		for _, n := range names {
			sc, err := scenarios.Find(n)
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, sc)
		}
		return list
	}
	for _, c := range []struct {
		name    string
		args    []string
		backend string
		list    []*scenarios.Scenario
	}{
		{"seed with a generator among stories", []string{"--seed", "1"}, "", find("redlock-clock-jump", "gen-pause")},
		{"quiet without step", []string{"-q"}, "", find("redlock-clock-jump")},
		{"step on a story", []string{"--step"}, "", find("redlock-clock-jump")},
		{"image with docker", []string{"--redis-image", "redis:7", "--backend", "docker"}, "docker", find("redlock-clock-jump")},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := runCmd()
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			o := runOptions{flags: cmd.Flags(), step: cmd.Flags().Changed("step")}
			o.backend.Name = c.backend
			if err := refuseIdle(o.flags, runIdle(o, c.list)...); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
	sweep := sweepCmd()
	if err := sweep.ParseFlags([]string{"--points", "4", "--param", "pause=0.2ttl..3ttl"}); err != nil {
		t.Fatal(err)
	}
	o := sweepOptions{flags: sweep.Flags(), param: "pause=0.2ttl..3ttl"}
	if err := refuseIdle(o.flags, sweepIdle(o, find("gen-pause")[0])...); err != nil {
		t.Fatalf("--points with --param refused: %v", err)
	}
}
