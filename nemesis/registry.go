package nemesis

import (
	"fmt"
	"sort"
	"time"

	"github.com/locksim/locksim/clients"
)

// Facts is what a kind may check a step against: the scenario's servers
// and clients.
type Facts struct {
	// NodeClockless, when set, says why no clock fault reaches the
	// scenario's nodes (etcd's members), as their lock backend says it.
	NodeClockless string
	Nodes         int
	Clients       int
	Replicas      bool
	// Persistent: the nodes keep what they write in a file (Redis's
	// persistence everysec or always).
	Persistent bool
}

// Setup is the servers a hunt's stories run on, as a kind's Available
// reads them.
type Setup struct {
	// Lock is the lock hunted, for the reasons given.
	Lock string
	// Backend is the lock's backend (redis, postgres, etcd...).
	Backend clients.Backend
	// Nodes is how many lock servers a node fault may strike (A, B...);
	// 0: none.
	Nodes int
	// NodeClockless, when set, says why no clock fault reaches the nodes.
	NodeClockless string
	// Links says a client has links a fault may act on (its lock
	// servers' or its storage's).
	Links bool
}

// Shape is what a hunt aims a kind at, besides a client or a node.
type Shape struct {
	// Links: some of a client's links, its storage's or its lock
	// servers'.
	Links bool
	// LockLinks: some of a client's links to its lock servers only.
	LockLinks bool
	// Replicas: a Redis node with a replica (the story sets replicas).
	Replicas bool
	// ClientsToo: a kind drawn on a node (Generated.OnNode) may strike a
	// client instead (a clock jump steps a client's clock).
	ClientsToo bool
	// Silences: the links it strikes answer nothing, so each call over
	// them waits its whole timeout (a partition).
	Silences bool
	// Delays: it slows the links it strikes by its drawn size, in TTLs (a
	// latency).
	Delays bool
}

// Spec declares a fault kind, in the style of toxiproxy's toxics: each
// fault file registers its kinds (init) with a parameter struct of its
// own, P, whose yaml-tagged fields are the step's fields. The loader
// decodes a step strictly into a new P (an unknown field is refused with
// its line), the schema and docs/scenarios.md list P's fields with their
// doc comments, and the runner builds the fault from the decoded P.
// Everything else a kind is, it says here: its effect, where a hunt can
// place it and how.
type Spec[P any] struct {
	// Name is the step's `do:`, and the name its faults record
	// (Fault.Name).
	Name string
	// Doc is one line for help text.
	Doc string
	// Effect is the harm its faults do (history.EffectPause, ...Clock,
	// ...Network, ...Down), as their Fields say it: the timing guard and
	// the hunt read it here. "" for a kind that ends faults (resume).
	Effect string
	// Needs lists the step fields the kind requires.
	Needs []string
	// Check refuses parameters this scenario cannot honour (nil: none),
	// naming the offending field.
	Check func(p *P, f Facts) *ParamError
	// New builds the fault. A kind that ends faults instead (resume)
	// leaves it nil and sets Heals.
	New func(p *P) Breaker
	// Heals says whether an injected fault is one this step ends.
	Heals func(p *P, f Breaker) bool
	// Draw, when set, lets generator scenarios and hunts draw this
	// fault's size.
	Draw *Draw[P]
	// Place, when set, lets a hunt place this fault by its shape, with no
	// size to draw: it makes the parameters for what the hunt aims it at
	// (a client's links, a node).
	Place func(a Aim) P
	// Shape is what a hunt aims it at besides a client or a node.
	Shape Shape
	// OnPostgres: a story may aim it at node PGNode, the run's PostgreSQL
	// server, where the lock's server is PostgreSQL (a crash kills and
	// restarts it); a hunt does not.
	OnPostgres bool
	// Available, when set, says why a hunt cannot place the kind on these
	// servers ("" when it can); nil: it can on any.
	Available func(s Setup) string
	// Lasting, when set, says why healing the fault does not put the
	// servers back as they were (a failover's promoted replica stays the
	// primary): servers kept from one story to the next (runner.Kept)
	// are started afresh after a story that injected it.
	Lasting string
	// Unrealistic, when set, says why a fault with these parameters is a
	// form no real machine has ("" when one has it): a client's wall clock
	// drifting while its CLOCK_MONOTONIC does not, say, where a slow
	// oscillator or NTP's slew moves both (no kind has such a form today:
	// docs/faults.md). A story may play it to teach a point; sim findings
	// never counts it against a library.
	Unrealistic func(p *P) string
	// Realistic says what size of this fault real machines have, with
	// the source that says so ("any size: ..."; "within 500 ppm: ...").
	// Every kind that builds faults states it; a kind whose range is
	// bounded also says, by Unrealistic, when a fault is outside it.
	Realistic string
}

// Draw says how a generator draws a kind: what it aims at and the one
// parameter it draws, and how the kind's parameters are made from a draw.
type Draw[P any] struct {
	Generated
	// Params makes the step parameters of a drawn fault: what it aims at
	// (the client whose critical section, the node for OnNode, the
	// client's links a hunt chose) and the drawn value (nanoseconds for a
	// duration, else the number).
	Params func(a Aim, x float64) P
}

// Kind is a registered fault kind, its parameter struct hidden behind
// any: what the loader, the runner and the reports find by name.
type Kind struct {
	Name, Doc string
	// Effect, Shape, OnPostgres and Available are the Spec's.
	Effect     string
	Shape      Shape
	OnPostgres bool
	Available  func(s Setup) string
	Needs      []string
	// Params makes a new parameter struct (a pointer) to decode a step
	// into.
	Params func() any
	// Check, New and Heals are the Spec's, on what Params made (nil
	// where the Spec's are).
	Check func(p any, f Facts) *ParamError
	New   func(p any) Fault
	Heals func(p any, f Fault) bool
	// Place is the Spec's, returning a pointer to its P.
	Place func(a Aim) any
	// Generate, when set, lets generator scenarios draw this fault.
	Generate *Generated
	// Lasting is the Spec's.
	Lasting string
	// Unrealistic is the Spec's, on what Params made (nil: every fault of
	// the kind is one a machine has).
	Unrealistic func(p any) string
	// Realistic is the Spec's: the size real machines have, and its source.
	Realistic string
}

// Unit is what a drawn parameter measures.
type Unit int

const (
	// UnitDuration: a length of time, which a sweep may give relative to
	// the TTL (0.5ttl).
	UnitDuration Unit = iota
	// UnitRate: a plain number (a clock's rate).
	UnitRate
)

// Drawn is the parameter a generator draws for a fault: its size.
type Drawn struct {
	// Name is the generator field that sets it and the sweep parameter
	// that varies it (pause, jump, delay, drift).
	Name string
	// Unit says whether it is a duration or a number.
	Unit Unit
	// Doc says what it sets, for help text ("length of the pause fault").
	Doc string
	// What names the fault in a plot's title ("the pause").
	What string
	// Range is where its interesting values lie: multiples of the TTL
	// for a duration, plain numbers for a rate. `--param NAME` alone
	// sweeps it.
	Range [2]float64
	// Classic is its value in the classic shape a hunt tries first (a
	// pause of 1.5 TTL, a restart at once).
	Classic float64
}

// Generated says how a generator scenario's schedule draws a fault.
type Generated struct {
	// Drawn is the parameter drawn.
	Drawn
	// OnNode: it hits one of the lock's nodes drawn at random (a clock
	// fault, a crash); else
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
	// HuntOnly: a generator's schedule does not draw it (it is not in
	// GeneratedKinds, nor a generator field or a sweep parameter); only a
	// hunt, which plays it in a story, does (DrawnKinds).
	HuntOnly bool
	// Params makes the kind's parameters (a pointer to its Spec's P) from
	// the draw, as a step with those fields would give them; Build makes
	// the fault. Register fills both in from the Draw's Params and the
	// kind's New.
	Params func(a Aim, x float64) any
	Build  func(a Aim, x float64) Fault
}

// DrawsUnrealistic says why every size the kind draws (its Drawn range)
// is outside what real machines have, "" when some size inside it is
// not: a hunt that searches only what machines have leaves such a kind
// out (a clock-drift drawn from 1x to 3x, where a machine's stays within
// 500 ppm of 1x).
func (k Kind) DrawsUnrealistic() string {
	g := k.Generate
	if g == nil || k.Unrealistic == nil || g.Params == nil {
		return ""
	}
	aim := Aim{Node: "A", Client: 1}
	lo, hi := g.Range[0], g.Range[1]
	// A draw at its low end that is outside already: the range holds no
	// size a machine has (the range's ends are its widest and narrowest).
	if lo == hi || k.Unrealistic(g.Params(aim, lo+(hi-lo)*1e-3)) == "" {
		return ""
	}
	return k.Unrealistic(g.Params(aim, g.Classic))
}

// GeneratedKinds lists the kinds a generator scenario can draw, by name.
func GeneratedKinds() []Kind {
	var out []Kind
	for _, k := range DrawnKinds() {
		if !k.Generate.HuntOnly {
			out = append(out, k)
		}
	}
	return out
}

// DrawnKinds lists the kinds that say how to draw them, those only a
// hunt draws included, by name.
func DrawnKinds() []Kind {
	var out []Kind
	for _, k := range Kinds() {
		if k.Generate != nil {
			out = append(out, k)
		}
	}
	return out
}

// LookupDrawn finds the generated kind whose drawn parameter is called
// name (pause -> the pause kind).
func LookupDrawn(name string) (Kind, bool) {
	for _, k := range GeneratedKinds() {
		if k.Generate.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// ParamError names the step field a kind refuses.
type ParamError struct {
	Field, Msg string
}

func (e *ParamError) Error() string { return e.Field + ": " + e.Msg }

var kinds = map[string]Kind{}

// Register adds a kind; a second kind of the same name, or one with both
// or neither of New and Heals, panics.
func Register[P any](s Spec[P]) {
	if _, dup := kinds[s.Name]; dup {
		panic(fmt.Sprintf("nemesis: fault kind %q registered twice", s.Name))
	}
	if (s.New == nil) == (s.Heals == nil) {
		panic(fmt.Sprintf("nemesis: fault kind %q needs exactly one of New and Heals", s.Name))
	}
	if (s.New == nil) != (s.Effect == "") {
		panic(fmt.Sprintf("nemesis: fault kind %q: a kind that builds faults says their Effect, and only one", s.Name))
	}
	if s.New != nil && s.Realistic == "" {
		panic(fmt.Sprintf("nemesis: fault kind %q: say what size of it real machines have (Realistic), with a source", s.Name))
	}
	if s.Place != nil && s.New == nil {
		panic(fmt.Sprintf("nemesis: fault kind %q places a fault it cannot build", s.Name))
	}
	k := Kind{Name: s.Name, Doc: s.Doc, Effect: s.Effect, Shape: s.Shape, OnPostgres: s.OnPostgres, Available: s.Available, Needs: s.Needs,
		Params: func() any { return new(P) }, Lasting: s.Lasting, Realistic: s.Realistic}
	if s.Place != nil {
		k.Place = func(a Aim) any { p := s.Place(a); return &p }
	}
	if s.Check != nil {
		k.Check = func(p any, f Facts) *ParamError { return s.Check(p.(*P), f) }
	}
	if s.New != nil {
		k.New = func(p any) Fault { return &named{Breaker: s.New(p.(*P)), kind: s.Name, effect: s.Effect} }
	}
	if s.Heals != nil {
		k.Heals = func(p any, f Fault) bool { return s.Heals(p.(*P), Unwrap(f)) }
	}
	if s.Unrealistic != nil {
		k.Unrealistic = func(p any) string { return s.Unrealistic(p.(*P)) }
	}
	if d := s.Draw; d != nil {
		if s.New == nil || d.Params == nil {
			panic(fmt.Sprintf("nemesis: fault kind %q draws a fault it cannot build", s.Name))
		}
		g := d.Generated
		g.Params = func(a Aim, x float64) any {
			p := d.Params(a, x)
			return &p
		}
		g.Build = func(a Aim, x float64) Fault {
			return &named{Breaker: s.New(g.Params(a, x).(*P)), kind: s.Name, effect: s.Effect}
		}
		k.Generate = &g
	}
	kinds[s.Name] = k
}

// Placeable says whether a hunt can place the kind: it draws its size
// (Draw) or places it by shape (Place).
func (k Kind) Placeable() bool { return k.Generate != nil || k.Place != nil }

// Why says why a hunt cannot place the kind on servers s ("" when it
// can).
func (k Kind) Why(s Setup) string {
	if k.Available == nil {
		return ""
	}
	return k.Available(s)
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

// ClientOrNode are the fields of a kind that acts on one client or one
// node (pause, resume, clock-jump): exactly one is set.
type ClientOrNode struct {
	// Client is the client it acts on (from 1); set this or node.
	Client int `yaml:"client"`
	// Node is the server it acts on (A, B...); set this or client.
	Node string `yaml:"node"`
}

// who says which it is, for On().
func (c ClientOrNode) who() string {
	if c.Node != "" {
		return c.Node
	}
	return fmt.Sprintf("client %d", c.Client)
}

// exactlyOne is the check of a kind that acts on a client or a node.
func (c ClientOrNode) exactlyOne(kind string) *ParamError {
	if (c.Client != 0) == (c.Node != "") {
		return &ParamError{"do", fmt.Sprintf("%q needs exactly one of client or node", kind)}
	}
	return nil
}

// ClientLinks are the fields of a kind that acts on one client's links.
type ClientLinks struct {
	// Client is the client whose links it acts on (from 1).
	Client int `yaml:"client"`
	// Links lists the client's links it acts on, by the server at their
	// other end: Redis nodes (A, B...), pg (the lock's PostgreSQL) or
	// storage (the protected storage).
	Links []string `yaml:"links"`
}

// OneNode is the field of a kind that acts on one server.
type OneNode struct {
	// Node is the server it acts on (A, B...).
	Node string `yaml:"node"`
}

// noNodeClock refuses a clock fault on a node whose clock no fault
// reaches (an etcd member's), with the reason its backend gives.
func noNodeClock(node string, f Facts) *ParamError {
	if node != "" && f.NodeClockless != "" {
		return &ParamError{"node", f.NodeClockless}
	}
	return nil
}

// needsReplicas refuses a replication fault in a scenario without replicas.
func needsReplicas(name string, f Facts) *ParamError {
	if !f.Replicas {
		return &ParamError{"do", fmt.Sprintf("%q needs replicas: true", name)}
	}
	return nil
}

// nonNegative refuses a negative duration in field.
func nonNegative(field string, d time.Duration) *ParamError {
	if d < 0 {
		return &ParamError{field, fmt.Sprintf("expected a positive duration, got %v", d)}
	}
	return nil
}

// firstRefusal returns the first of the refusals that is not nil.
func firstRefusal(errs ...*ParamError) *ParamError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Aim is what a fault step acts on: a client, a node, a client's links.
type Aim struct {
	Client int
	Node   string
	Links  []string
}

// Aimed is the parameters of a kind that acts on something, through the
// shared field sets below: the loader checks the client, node and links
// they name against the scenario.
type Aimed interface{ Aim() Aim }

// Aim is what the step names.
func (c ClientOrNode) Aim() Aim { return Aim{Client: c.Client, Node: c.Node} }

// Aim is what the step names.
func (c ClientLinks) Aim() Aim { return Aim{Client: c.Client, Links: c.Links} }

// Aim is what the step names.
func (n OneNode) Aim() Aim { return Aim{Node: n.Node} }

// onLinks places a fault on a client's links (partition, drop, reset).
func onLinks(a Aim) ClientLinks { return ClientLinks{Client: a.Client, Links: a.Links} }

// onNode places a fault on a node (failover, replication-lag).
func onNode(a Aim) OneNode { return OneNode{Node: a.Node} }

// clientLinks is where a kind that acts on a client's links is available:
// where a client has some.
func clientLinks(s Setup) string {
	if !s.Links {
		return "it acts on a client's links and the story has none"
	}
	return ""
}

// lockNodes is where a kind that strikes a lock server is available:
// where the lock's servers are nodes of the story.
func lockNodes(s Setup) string {
	if s.Nodes == 0 {
		return fmt.Sprintf("it strikes a lock server and %s's are not nodes of the story", s.Lock)
	}
	return ""
}

// nodeClock is where a kind that runs a lock server's clock is available.
func nodeClock(s Setup) string {
	switch {
	case s.NodeClockless != "":
		return s.NodeClockless
	case s.Nodes == 0:
		return fmt.Sprintf("it runs a lock server's clock and %s's are not nodes of the story", s.Lock)
	}
	return ""
}

// redisNodes is where a kind that strikes a Redis node is available:
// where the lock's servers are Redis nodes of the story.
func redisNodes(s Setup) string {
	if why := lockNodes(s); why != "" {
		return why
	}
	if s.Backend != clients.RedisBackend {
		return fmt.Sprintf("it strikes a Redis node, and %s's servers are not", s.Lock)
	}
	return ""
}

// redisReplicas is where a kind that needs replicas is available: on
// Redis nodes.
func redisReplicas(s Setup) string {
	if s.Backend != clients.RedisBackend {
		return fmt.Sprintf("it needs Redis nodes with replicas, and %s's servers are not", s.Lock)
	}
	return ""
}
