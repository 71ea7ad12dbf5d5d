package nemesis

import (
	"fmt"
	"sort"
	"time"
)

// Params are a fault step's parameters as a scenario gives them; each
// kind reads the ones it takes.
type Params struct {
	Client        int
	Node          string
	Nodes         []string
	For           time.Duration
	By            time.Duration
	Delay, Jitter time.Duration
	Stream        string
	Rate          float64
	NodeClock     bool
	// Given lists the fields the step set (by their YAML names), for
	// kinds that need one of two.
	Given map[string]bool
}

// Facts is what a kind may check a step against: the scenario's servers
// and clients.
type Facts struct {
	// NodeClockless, when set, says why no clock fault reaches the
	// scenario's nodes (etcd's members), as their lock backend says it.
	NodeClockless string
	Nodes         int
	Clients       int
	Replicas      bool
}

// Kind is one fault as scenarios name it, in the style of toxiproxy's
// toxics: each fault file registers its kinds (init), and the loader, the
// runner and the reports find them here by name.
type Kind struct {
	// Name is the step's `do:`.
	Name string
	// Doc is one line for help text.
	Doc string
	// Needs lists the step fields the kind requires.
	Needs []string
	// Check refuses parameters this scenario cannot honour (nil: none),
	// naming the offending field.
	Check func(p Params, f Facts) *ParamError
	// New builds the fault. A kind that ends faults instead (resume)
	// leaves it nil and sets Heals.
	New func(p Params) Fault
	// Heals says whether an injected fault is one this step ends.
	Heals func(p Params, f Fault) bool
	// Generate, when set, lets generator scenarios draw this fault.
	Generate *Generated
}

// Generated says how a generator scenario's schedule draws a fault.
type Generated struct {
	// Size names the generator field that sizes it (pause, jump, delay or
	// drift), which is also its sweep parameter.
	Size string
	// OnNode: it hits a Redis node drawn at random (a clock fault); else
	// the drawn client, at the start of its next critical section.
	OnNode bool
	// Whole: it strikes at the start of the trial and lasts it (a drift),
	// instead of being aimed at a critical section.
	Whole bool
	// UntilSectionEnds: it is healed when the critical section it aimed
	// at ends (a delayed write); else with the trial.
	UntilSectionEnds bool
	// Outlasts is how long after it strikes the clients must keep looping
	// for the fault to have run its course, given its size.
	Outlasts func(size time.Duration) time.Duration
	// Build makes the fault from the draw: the client or node it hits and
	// its size (or rate, for a drift).
	Build func(client int, node string, size time.Duration, rate float64) Fault
}

// GeneratedKinds lists the kinds a generator scenario can draw, by name.
func GeneratedKinds() []Kind {
	var out []Kind
	for _, k := range Kinds() {
		if k.Generate != nil {
			out = append(out, k)
		}
	}
	return out
}

// ParamError names the step field a kind refuses.
type ParamError struct {
	Field, Msg string
}

func (e *ParamError) Error() string { return e.Field + ": " + e.Msg }

var kinds = map[string]Kind{}

// Register adds a kind; a second kind of the same name panics.
func Register(k Kind) {
	if _, dup := kinds[k.Name]; dup {
		panic(fmt.Sprintf("nemesis: fault kind %q registered twice", k.Name))
	}
	if (k.New == nil) == (k.Heals == nil) {
		panic(fmt.Sprintf("nemesis: fault kind %q needs exactly one of New and Heals", k.Name))
	}
	kinds[k.Name] = k
}

// LookupKind finds a kind by name.
func LookupKind(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Kinds lists every kind, by name.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// oneOfClientOrNode is the Check of kinds that act on a client or a node.
func oneOfClientOrNode(name string) func(Params, Facts) *ParamError {
	return func(p Params, _ Facts) *ParamError {
		if p.Given["client"] == p.Given["node"] {
			return &ParamError{"do", fmt.Sprintf("%q needs exactly one of client or node", name)}
		}
		return nil
	}
}

// noNodeClock refuses a clock fault on a node whose clock no fault
// reaches (an etcd member's).
func noNodeClock(p Params, f Facts) *ParamError {
	if p.Node != "" && f.NodeClockless != "" {
		return &ParamError{"node", f.NodeClockless}
	}
	return nil
}

// needsReplicas refuses a replication fault in a scenario without replicas.
func needsReplicas(name string) func(Params, Facts) *ParamError {
	return func(_ Params, f Facts) *ParamError {
		if !f.Replicas {
			return &ParamError{"do", fmt.Sprintf("%q needs replicas: true", name)}
		}
		return nil
	}
}

// all runs checks in order and returns the first refusal.
func all(checks ...func(Params, Facts) *ParamError) func(Params, Facts) *ParamError {
	return func(p Params, f Facts) *ParamError {
		for _, c := range checks {
			if err := c(p, f); err != nil {
				return err
			}
		}
		return nil
	}
}
