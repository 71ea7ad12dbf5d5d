package hunt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// step is one step of a story as a hunt builds it.
type step = scenarios.Step

// Story is a plan made into a story: the scenario the runner plays and
// the text of its file (scenarios.Marshal), which loads as the same
// scenario.
type Story struct {
	Plan     Plan
	Scenario *scenarios.Scenario
	YAML     []byte
	steps    []step
}

// Meta is what a story's file says about where it came from.
type Meta struct {
	Name, Title, Source, Explain string
	// Expected is the verdict the story ends with: unsafe, or leaked for
	// a call that never returned ("": unsafe).
	Expected checker.Verdict
}

// build makes plan p in space sp a scenario, built in Go and validated
// as the catalogue's are (scenarios.Build), and writes its file
// (scenarios.Marshal). The steps are the plan's timeline: each client
// asks at its turn, reads, works and writes, and releases; each fault
// strikes at its anchor and offset. The faults are marked cause: the
// counterfactual is the same story without them. A plan with no fault
// has the clients' timing for its cause: its counterfactual gives a
// lock whose leases expire a TTL that outlasts every client's work (the
// TTL trap), and a lock without a TTL one client alone.
func (sp Space) build(p Plan, m Meta, claims []claim) (*Story, error) {
	ttl := sp.TTL
	sc := scenarios.Scenario{Name: m.Name, Title: m.Title, Source: m.Source, Explain: m.Explain, Expected: cmp.Or(m.Expected, checker.Unsafe),
		Conditions: scenarios.Conditions{Lock: sp.Lock, TTL: dur(ttl), ClientCmd: sp.ClientCmd}}
	writes := sp.Storage != "none"
	if writes {
		sc.Storage = sp.Storage
		sc.Fence = sp.fence()
	}
	if len(p.Turns) < 2 {
		return nil, fmt.Errorf("a plan needs two clients' turns, got %d", len(p.Turns))
	}
	if len(p.Turns) > 2 {
		sc.Clients = len(p.Turns)
	}
	if p.Options.Watchdog || sp.ownWatchdog {
		sc.Watchdog = "token"
	}
	sc.CheckLease = p.Options.CheckLease
	var redis backends.RedisSettings
	redis.Replicas = p.Options.Replicas
	if slices.ContainsFunc(p.Faults, func(f Fault) bool { return f.Kind == "power-loss" }) {
		// A power loss cuts back what a node keeps in its file: the nodes
		// keep one, synced as Redis does by default (everysec).
		redis.Persistence = "everysec"
	}
	if redis != (backends.RedisSettings{}) {
		sc.Settings = redis
	}

	nodeTimeout := scenarios.DefaultNodeTimeout
	if sp.nodeTimeout > 0 {
		nodeTimeout = sp.nodeTimeout
		if p.Options.NodeTimeout > 0 {
			nodeTimeout = time.Duration(p.Options.NodeTimeout * float64(ttl))
		}
		sc.NodeTimeout = dur(nodeTimeout)
	}
	steps, err := timeline(p, writes, ttl, nodeTimeout) // timeline.go
	if err != nil {
		return nil, err
	}
	for i := range steps {
		if i < len(claims) {
			claims[i].apply(&steps[i])
		}
	}

	switch {
	case sp.Baseline != "":
		sc.Counterfactual = &scenarios.Counterfactual{Change: "with lock " + sp.Baseline, Conditions: scenarios.Conditions{Lock: sp.Baseline}}
		if len(sp.ClientCmd) > 0 || len(sp.BaselineCmd) > 0 {
			// The baseline's program; none, the harness's own worker.
			sc.Counterfactual.ClientCmd = slices.Clone(sp.BaselineCmd)
			sc.Counterfactual.Gives("client_cmd")
			sc.Counterfactual.Change += clientsOf(sp.BaselineCmd)
		}
		for i := range steps {
			steps[i].Cause = false // the lock is the cause, not the faults
		}
	case len(p.Faults) > 0:
		sc.Counterfactual = &scenarios.Counterfactual{Change: "without the faults"}
	case sp.expires:
		long := time.Duration(math.Ceil(4*p.span())) * ttl
		long = max(long.Round(100*time.Millisecond), time.Second)
		sc.Counterfactual = &scenarios.Counterfactual{Change: fmt.Sprintf("with a TTL of %v, which outlasts every client's work", long),
			Conditions: scenarios.Conditions{TTL: dur(long)}}
	default:
		// A lock without a TTL that lets a second client in with no
		// fault: alone, client 1 breaks nothing.
		sc.Counterfactual = &scenarios.Counterfactual{Change: "with client 1 alone (the others do nothing)"}
		for i := range steps {
			if steps[i].Client > 1 {
				steps[i].Counterfactual = &step{Do: "sleep", For: scenarios.Duration{Duration: time.Millisecond}, Say: steps[i].Say}
			}
		}
	}
	sc.Steps = scenarioSteps(steps)
	built, err := scenarios.Build(m.Name+".yaml", sc)
	if err != nil {
		return nil, err
	}
	text, err := scenarios.Marshal(built)
	if err != nil {
		return nil, err
	}
	return &Story{Plan: p, Scenario: built, YAML: text, steps: steps}, nil
}

// clientsOf says who plays a lock's clients: " played by PROGRAM", or
// " played by the harness's own worker".
func clientsOf(argv []string) string {
	if len(argv) == 0 {
		return " played by the harness's own worker"
	}
	return " played by " + strings.Join(argv, " ")
}

// span is how long the plan's workload lasts, in TTLs.
func (p Plan) span() float64 {
	end := 0.0
	for _, t := range p.Turns {
		end = max(end, t.At+t.Work)
	}
	return end
}

// faultStep is the step of one fault: the kind's own parameters, as its
// Draw makes them from the plan's draw, or as its Place makes them for
// what the plan aims it at (a client's links, a node).
func faultStep(f Fault, ttl time.Duration) (step, error) {
	k, ok := nemesis.LookupKind(f.Kind)
	if !ok || !k.Placeable() {
		return step{}, fmt.Errorf("fault kind %q cannot be placed by a hunt", f.Kind)
	}
	var params any
	if k.Generate != nil {
		params = k.Generate.Params(f.aim(), f.param(ttl))
	} else {
		params = k.Place(f.aim())
	}
	// Client is the fault's, for the timeline and the claims; the story
	// gives it in the parameters (scenarioSteps).
	return step{Do: f.Kind, Client: f.Client, Params: params, Cause: true, Say: "Fault: " + f.Describe(ttl) + "."}, nil
}

// scenarioSteps are the steps as the scenario has them: a fault step's
// client is in its parameters alone, as the loader puts it.
func scenarioSteps(steps []step) []step {
	out := slices.Clone(steps)
	for i := range out {
		if out[i].Params != nil {
			out[i].Client = 0
		}
	}
	return out
}

// dur is a duration of a story, to the millisecond, or finer when it is
// shorter.
func dur(d time.Duration) scenarios.Duration {
	return scenarios.Duration{Duration: roundDur(d)}
}

// roundDur rounds d to the millisecond when it is 10ms or longer.
func roundDur(d time.Duration) time.Duration {
	if d >= 10*time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d
}
