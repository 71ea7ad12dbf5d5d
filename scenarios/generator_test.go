package scenarios

import (
	"strings"
	"testing"
	"time"
)

const genGood = `name: g
lock: redis
expected: unsafe
storage: plain
generator:
  duration: 200ms
  fault: pause
  pause: 300ms
`

func TestGeneratorScenario(t *testing.T) {
	sc, err := Parse("g.yaml", []byte(genGood))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(GeneratorFaults, ","), "clock-drift,clock-jump,latency,pause") {
		t.Errorf("generators draw %v", GeneratorFaults)
	}
	g := sc.Generator
	if g.Duration.Duration != 200*time.Millisecond || g.Faults != 1 || g.Trials != 1 || g.WorkDist != "uniform" || g.Work.Duration != 2*time.Millisecond {
		t.Fatalf("defaults not applied: %+v", g)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", strings.Replace(genGood, "pause: 300ms", "pasue: 300ms", 1), "g.yaml:8: generator.pasue: unknown field"},
		{"bad fault", strings.Replace(genGood, "fault: pause", "fault: nap", 1), `g.yaml:7: generator.fault: expected one of ` + strings.Join(GeneratorFaults, ", ") + `, got "nap"`},
		{"negative pause", strings.Replace(genGood, "pause: 300ms", "pause: -1s", 1), "g.yaml:8: generator.pause: expected a positive duration"},
		{"no storage", strings.Replace(genGood, "storage: plain\n", "", 1), "storage: missing: a generator scenario needs protected storage"},
		{"steps too", genGood + "steps:\n  - do: acquire\n    client: 1\n", "steps: a generator scenario has no steps"},
		{"drift without rate", strings.Replace(strings.Replace(genGood, "fault: pause", "fault: clock-drift", 1), "  pause: 300ms\n", "", 1), "g.yaml:5: generator.drift: expected a rate above 0"},
		{"another fault's size", strings.Replace(genGood, "fault: pause", "fault: clock-drift", 1), "g.yaml:8: generator.pause: sizes a pause fault; this generator's fault is clock-drift (its size is drift)"},
		{"two sizes", strings.Replace(genGood, "pause: 300ms", "pause: 300ms\n  jump: 1s", 1), "g.yaml:9: generator.jump: a generator draws one size; pause is given too"},
		{"bad size", strings.Replace(genGood, "pause: 300ms", "pause: 300", 1), `g.yaml:8: generator.pause: expected a duration like 500ms or 10s, got "300"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}
