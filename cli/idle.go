package cli

// idle.go: a flag given where it has no effect is refused, in one line
// saying why (exit 2), command by command: sim sweep --points without
// --param would play one point, sim run --seed on a scripted story would
// draw nothing.

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// idleFlag is a flag that changes nothing where it is given: refused, so
// that no one believes it did something.
type idleFlag struct {
	// name is the flag's name, without dashes.
	name string
	// idle says it has no effect here.
	idle bool
	// why ends the line "--NAME has no effect WHY".
	why string
}

// refuseIdle refuses the first of rules whose flag was given (f.Changed)
// where it has no effect, in one line naming it and why (exit 2). A nil f
// (a test calling a command's function) gave none.
func refuseIdle(f *pflag.FlagSet, rules ...idleFlag) error {
	if f == nil {
		return nil
	}
	for _, r := range rules {
		if !r.idle || !f.Changed(r.name) {
			continue
		}
		name := "--" + r.name
		if fl := f.Lookup(r.name); fl != nil && fl.Shorthand != "" {
			name += " (-" + fl.Shorthand + ")"
		}
		return fmt.Errorf("%s has no effect %s", name, r.why)
	}
	return nil
}

// idleImages are the --NAME-image flags, idle when the servers run as
// local processes: no --backend docker, and docker says whether a
// scenario's backend field asks for containers.
func idleImages(h runner.Host, docker bool) []idleFlag {
	var rules []idleFlag
	for _, b := range backends.All() {
		if def, _ := b.Image(); def != "" {
			rules = append(rules, idleFlag{imageFlagName(b), h.Name == "" && !docker,
				"without --backend docker: the servers run as local processes, from no image"})
		}
	}
	return rules
}

// runIdle are sim run's idle flags, for the scenarios it plays.
func runIdle(o runOptions, list []*scenarios.Scenario) []idleFlag {
	gen := firstGenerator(list)
	rules := []idleFlag{
		{"quiet", o.step, "with --step: a workshop narrates every step"},
		{"seed", gen == nil, seedless},
	}
	if gen != nil && len(list) == 1 { // --step with several: refused as such
		rules = append(rules, idleFlag{"step", true, fmt.Sprintf("on %s, a generator scenario: its trials have no steps to stop before", gen.Name)})
	}
	return append(rules, idleImages(o.backend, wantsDocker(list))...)
}

// matrixIdle are sim matrix's idle flags, for the scenarios it plays.
func matrixIdle(o matrixOptions, list []*scenarios.Scenario) []idleFlag {
	return append([]idleFlag{{"seed", firstGenerator(list) == nil, seedless}}, idleImages(o.backend, wantsDocker(list))...)
}

// sweepIdle are sim sweep's idle flags, for the generator it sweeps.
func sweepIdle(o sweepOptions, sc *scenarios.Scenario) []idleFlag {
	return append([]idleFlag{{"points", o.param == "", "without --param: a sweep with no parameter plays one point"}},
		idleImages(o.backend, wantsDocker([]*scenarios.Scenario{sc}))...)
}

// huntIdle are sim hunt's idle flags: its stories name no backend.
func huntIdle(o huntOptions) []idleFlag { return idleImages(o.backend, false) }

// seedless says why --seed does nothing for scripted stories.
const seedless = "on scripted stories: nothing in them is drawn at random (a seed draws a generator's schedules: sim list gen-)"

// firstGenerator is the first generator scenario of list, nil when all
// are scripted stories.
func firstGenerator(list []*scenarios.Scenario) *scenarios.Scenario {
	if i := slices.IndexFunc(list, func(sc *scenarios.Scenario) bool { return sc.Generator != nil }); i >= 0 {
		return list[i]
	}
	return nil
}

// wantsDocker says whether a scenario of list asks, by its backend
// field, for its servers in containers.
func wantsDocker(list []*scenarios.Scenario) bool {
	return slices.ContainsFunc(list, func(sc *scenarios.Scenario) bool { return sc.ServerBackend == env.HostDocker })
}
