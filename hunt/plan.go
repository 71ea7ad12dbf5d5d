// Package hunt searches fault schedules against a lock for a violation
// of mutual exclusion or of the protected data, shrinks the first one it
// finds to a minimal story, and writes that story as a scenario file that
// `sim run` plays like any in the catalogue.
//
// A candidate is a Plan: the story workload (two or three clients, each
// taking the lock at its turn, doing a read-modify-write of the
// protected counter that takes its work time, and releasing), the lock's
// options a story can set (a watchdog, the lease check, replicas), and
// faults, each anchored to a protocol event of one client (it asks for
// the lock, it is granted, it has read, it has released) plus an offset.
// A fault is a kind the fault registry says how to draw (nemesis.Drawn:
// its parameter and its range relative to the TTL), or one it says how
// to place by shape (nemesis.Spec's Place and Shape: a partition that
// splits the nodes into two majorities, a dropped connection, a
// failover); the registry also says where each kind applies
// (Available). A plan is built as a scenario in Go (scenarios.Build,
// which validates it as the loader validates every story), written as
// its file (scenarios.Marshal), and played on real servers by the
// runner.
package hunt

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

// Plan is one candidate schedule.
type Plan struct {
	// Turns are the clients' turns, client 1's first.
	Turns []Turn `json:"clients"`
	// Faults strike at their anchors.
	Faults []Fault `json:"faults"`
	// Options are the lock's options the story sets.
	Options LockOptions `json:"options"`
}

// Turn is one client's part of the workload.
type Turn struct {
	// At is when it asks for the lock, in TTLs after client 1 asks.
	At float64 `json:"at_ttl"`
	// Work is how long it works between its read and its write (with no
	// storage: how long it holds the lock before releasing), in TTLs.
	Work float64 `json:"work_ttl"`
}

// LockOptions are the options of the lock a story can set.
type LockOptions struct {
	// Watchdog renews the lease in the background (watchdog: token).
	Watchdog bool `json:"watchdog,omitempty"`
	// CheckLease checks the lease just before each write (check_lease).
	CheckLease bool `json:"check_lease,omitempty"`
	// Replicas gives every Redis node an asynchronous replica (replicas),
	// which a failover promotes.
	Replicas bool `json:"replicas,omitempty"`
	// NodeTimeout, when set, is how long a client waits for each node,
	// in TTLs (node_timeout); 0: the space's, a tenth of the TTL. A long
	// one lets an acquire outlive a pause of its client.
	NodeTimeout float64 `json:"node_timeout_ttl,omitempty"`
}

// The protocol events a fault is anchored to, in the order one client
// meets them.
const (
	// Start: before anything (the anchor's client is 0).
	Start = "start"
	// Asks: the client's acquire is on its way; the fault strikes while
	// it waits for the nodes' answers.
	Asks = "asks"
	// Granted: its acquire came back, before it reads.
	Granted = "granted"
	// Read: it has read the counter and works (with no storage, as
	// Granted).
	Read = "read"
	// Released: it has released the lock.
	Released = "released"
)

// Events lists the anchor events in the order a client meets them.
var Events = []string{Asks, Granted, Read, Released}

// Anchor is the protocol event a fault strikes after.
type Anchor struct {
	// Client is whose event (0 with Start).
	Client int `json:"client,omitempty"`
	// Event is one of Start and Events.
	Event string `json:"event"`
}

func (a Anchor) String() string {
	if a.Event == Start || a.Event == "" {
		return "at the start"
	}
	what := map[string]string{Asks: "while client %d's acquire waits", Granted: "once client %d is granted",
		Read: "once client %d has read", Released: "once client %d has released"}[a.Event]
	return fmt.Sprintf(what, a.Client)
}

// since says when a fault strikes x TTLs after the anchor ("0.1 TTL after
// client 1's grant").
func (a Anchor) since(x float64) string {
	if a.Event == Start || a.Event == "" {
		return fmtTTL(x) + " after the start"
	}
	what := map[string]string{Asks: "client %d asks", Granted: "client %d's grant",
		Read: "client %d's read", Released: "client %d's release"}[a.Event]
	return fmtTTL(x) + " after " + fmt.Sprintf(what, a.Client)
}

// order is where an anchor comes among those of a plan with n clients:
// the start, then each client's events in turn.
func (a Anchor) order() int {
	if a.Event == Start || a.Event == "" {
		return 0
	}
	return 1 + (a.Client-1)*len(Events) + slices.Index(Events, a.Event)
}

// Fault is one fault of a plan: a kind, whom it aims at, its drawn value,
// when it strikes.
type Fault struct {
	// Kind is a fault kind the hunt can place (Searchable).
	Kind string `json:"kind"`
	// Client is the client it strikes (1: the first holder), for a kind
	// that strikes a client.
	Client int `json:"client,omitempty"`
	// Node is the server it strikes, for a kind that strikes a node.
	Node string `json:"node,omitempty"`
	// Links are the client's links it acts on (nodes, pg, storage), for
	// a kind that acts on links.
	Links []string `json:"links,omitempty"`
	// X is the drawn value, for a kind with a drawn parameter: a multiple
	// of the TTL for a duration (a clock jump of a client's clock steps
	// it back by it), else the number itself (a clock's rate).
	X float64 `json:"x,omitempty"`
	// At is the event it strikes after, After TTLs later.
	At    Anchor  `json:"at"`
	After float64 `json:"after_ttl,omitempty"`
}

// kind is the fault's kind, as the registry has it.
func (f Fault) kind() nemesis.Kind {
	k, _ := nemesis.LookupKind(f.Kind)
	return k
}

// drawn is the kind's drawn parameter; ok is false for a kind placed by
// shape.
func (f Fault) drawn() (nemesis.Generated, bool) {
	k := f.kind()
	if k.Generate == nil {
		return nemesis.Generated{}, false
	}
	return *k.Generate, true
}

// value is X as the kind's Build takes it: nanoseconds for a duration,
// negative for a client's clock jump.
func (f Fault) value(ttl time.Duration) float64 {
	g, _ := f.drawn()
	if g.Unit == nemesis.UnitRate {
		return f.X
	}
	v := math.Round(f.X * float64(ttl))
	if f.Client != 0 && g.OnNode {
		v = -v // a client's clock steps back: its lease seems to last longer
	}
	return v
}

// param is value as the story's step gives it: a duration to the
// millisecond when it is 10ms or longer, as a story's durations are.
func (f Fault) param(ttl time.Duration) float64 {
	v := f.value(ttl)
	if g, _ := f.drawn(); g.Unit == nemesis.UnitDuration {
		v = float64(roundDur(time.Duration(v)))
	}
	return v
}

// Describe says what the fault does and when, in words ("pause on
// client 1 (450ms; pause 1.5 TTL) once client 1 has read").
func (f Fault) Describe(ttl time.Duration) string {
	if f.After > 0 {
		return f.What(ttl) + " " + f.At.since(f.After)
	}
	return f.What(ttl) + " " + f.At.String()
}

// What says what the fault does ("pause on client 1 (450ms; pause 1.5
// TTL)").
func (f Fault) What(ttl time.Duration) string {
	if g, ok := f.drawn(); ok {
		x := fmtTTL(f.X)
		if g.Unit == nemesis.UnitRate {
			x = strconv.FormatFloat(f.X, 'g', 3, 64)
		}
		b := g.Build(f.aim(), f.value(ttl))
		detail := b.Detail()
		if len(f.Links) > 0 {
			detail = strings.Join(f.Links, ",") + ": " + detail
		}
		return fmt.Sprintf("%s on %s (%s; %s %s)", f.Kind, f.On(), detail, g.Name, x)
	}
	if len(f.Links) > 0 {
		return fmt.Sprintf("%s on %s (links %s)", f.Kind, f.On(), strings.Join(f.Links, ","))
	}
	return fmt.Sprintf("%s on %s", f.Kind, f.On())
}

// aim is what the fault is aimed at, as the registry's Params and Place
// take it.
func (f Fault) aim() nemesis.Aim { return nemesis.Aim{Client: f.Client, Node: f.Node, Links: f.Links} }

// On names what the fault strikes ("client 1", "C").
func (f Fault) On() string {
	if f.Node != "" {
		return f.Node
	}
	return fmt.Sprintf("client %d", f.Client)
}

// fmtTTL prints a multiple of the TTL ("1.05 TTL").
func fmtTTL(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) + " TTL" }

// Space is what a hunt searches: a lock, its storage, the fault kinds
// allowed, how many clients, the options a story may set.
type Space struct {
	Lock    string
	Storage string
	Kinds   []string
	TTL     time.Duration
	// Nodes is how many lock servers a node fault may strike (A, B...);
	// 0: the lock has no server a node fault reaches.
	Nodes int
	// Clients is the most clients a candidate has (2 or 3).
	Clients int
	// Baseline, when set, is the lock a finding must not break: a
	// candidate counts only if it breaks Lock and, played again with
	// Baseline, does not (what Lock does differently, as a mutant from
	// the lock whose defence it breaks). The found story's
	// counterfactual is then Baseline.
	Baseline string
	// Options are the lock options a candidate may set: watchdog and
	// check_lease for a lock whose leases expire, replicas for Redis
	// nodes when a failover is searched.
	Options []string
	// ClientCmd is the client program every client of a candidate runs
	// (nil: the harness's own Go worker), and BaselineCmd the one the
	// baseline's clients run (nil: the Go worker). WithProgram sets them
	// and narrows the space to what the program's hello covers.
	ClientCmd, BaselineCmd []string
	// LeftOut says what the program's hello kept out of the search (the
	// options and clocks it does not cover), one item each.
	LeftOut []string
	// noClientClock says the clients' wall clocks cannot be moved (the
	// program's hello has no client_clock): a clock fault strikes nodes
	// only.
	noClientClock bool
	// lockLinks are the names of a client's links to the lock's servers;
	// expires says the lock's leases end by a TTL; nodeClockless why no
	// clock fault reaches its nodes ("" when one does).
	lockLinks     []string
	expires       bool
	nodeClockless string
	// nodeTimeout is the stories' node_timeout (0: the default), a tenth
	// of the TTL for Redis nodes: a client cut off from some waits that
	// long for them, which must not eat the lease a story is about.
	nodeTimeout time.Duration
}

// Searchable lists the fault kinds a hunt can place: those the registry
// says how to draw (each declares its parameter and range), a
// generator's and those only a hunt draws (a crash), and those it says
// how to place by shape (partition, drop, failover, replication-lag), by
// name.
func Searchable() []string {
	var out []string
	for _, k := range nemesis.Kinds() {
		if k.Placeable() {
			out = append(out, k.Name)
		}
	}
	return out
}

// NewSpace checks a hunt's choices and fills in what the lock implies.
// kinds empty: every searchable kind the lock's servers and the storage
// allow ("none" alone: no fault, the clients' timing). most is the most
// clients a candidate has (2 or 3; 0: 3).
func NewSpace(lock, storage string, kinds []string, ttl time.Duration, most int) (Space, error) {
	spec, err := clients.Lookup(lock)
	if err != nil {
		return Space{}, err
	}
	if !slices.Contains(scenarios.StorageModes, storage) && storage != "none" {
		return Space{}, input.Errorf("storage", strconv.Quote(storage), "expected none, "+strings.Join(scenarios.StorageModes[1:], ", "))
	}
	if ttl <= 0 {
		return Space{}, input.Errorf("ttl", ttl.String(), "expected a positive duration")
	}
	if ttl < spec.MinTTL {
		return Space{}, input.Errorf("ttl", ttl.String(), fmt.Sprintf("%s's leases last at least %v, so the faults' sizes would be relative to another lease than the one granted: give a {ttl} of %v or more", lock, spec.MinTTL, spec.MinTTL))
	}
	sp := Space{Lock: lock, Storage: storage, TTL: ttl, Nodes: scenarios.LockNodes(nil, spec), Clients: 3, expires: !spec.NoExpiry}
	if most != 0 {
		if most < 2 || most > 3 {
			return Space{}, input.Errorf("clients", strconv.Itoa(most), "expected 2 or 3")
		}
		sp.Clients = most
	}
	for i := 0; i < sp.Nodes; i++ {
		sp.lockLinks = append(sp.lockLinks, scenarios.NodeName(i))
	}
	if spec.Backend == clients.PostgresBackend {
		sp.lockLinks = []string{nemesis.PGNode}
	}
	clockless := ""
	if b := backends.Of(spec); b != nil {
		clockless = b.NodeClockless()
	}
	redisNodes := spec.Backend == clients.RedisBackend
	if redisNodes {
		sp.nodeTimeout = min(scenarios.DefaultNodeTimeout, ttl/10)
	}
	given := len(kinds) > 0
	if !given {
		kinds = Searchable()
	}
	if len(kinds) == 1 && kinds[0] == "none" { // the workload alone
		kinds = nil
	}
	setup := nemesis.Setup{Lock: lock, Backend: spec.Backend, Nodes: sp.Nodes, NodeClockless: clockless,
		Links: len(sp.lockLinks) > 0 || storage != "none"}
	replicas := false
	for _, k := range kinds {
		kind, ok := nemesis.LookupKind(k)
		if !ok || !kind.Placeable() {
			return Space{}, input.Errorf("faults", strconv.Quote(k), "expected none or some of "+strings.Join(Searchable(), ", "))
		}
		if why := kind.Why(setup); why != "" { // where it applies, as its kind says
			if given {
				return Space{}, input.Errorf("faults", k, why)
			}
			continue
		}
		sp.Kinds = append(sp.Kinds, k)
		replicas = replicas || kind.Shape.Replicas
	}
	if sp.expires && spec.Backend == clients.RedisBackend {
		sp.Options = append(sp.Options, "watchdog")
		if storage != "none" {
			sp.Options = append(sp.Options, "check_lease")
		}
	}
	if redisNodes && replicas {
		sp.Options = append(sp.Options, "replicas")
	}
	sp.nodeClockless = clockless
	return sp, nil
}

// WithProgram has every client of a candidate run program argv, whose
// hello p says what it covers, and narrows the space to that: the lock
// and the storage mode must be among its own (and the fencing token a
// fenced mode draws), else an error in one line; the lock options and
// the faults on a client's clock it does not cover are left out, each
// said in LeftOut. given says --faults named the kinds: a kind left with
// nothing to strike is then an error, not a note.
func (sp Space) WithProgram(argv []string, p scenarios.ClientProgram, given bool) (Space, error) {
	return sp.withProgram("client-cmd", argv, p, given)
}

// WithBaselineProgram has the baseline's clients run program argv (its
// hello p) instead of the harness's own worker: it must implement the
// baseline lock and the storage, and what it does not cover is left out
// of the search as WithProgram leaves it (a candidate the baseline
// cannot play would prove nothing).
func (sp Space) WithBaselineProgram(argv []string, p scenarios.ClientProgram, given bool) (Space, error) {
	if sp.Baseline == "" {
		return sp, input.Errorf("baseline-cmd", "", "it plays the baseline, and there is none: name one with {baseline}")
	}
	b := sp
	b.Lock = sp.Baseline
	b, err := b.withProgram("baseline-cmd", argv, p, given)
	if err != nil {
		return sp, err
	}
	sp.Options, sp.Kinds, sp.noClientClock = b.Options, b.Kinds, b.noClientClock
	for _, l := range b.LeftOut {
		sp.LeftOut = append(sp.LeftOut, "for the baseline's program: "+l)
	}
	sp.BaselineCmd = argv
	return sp, nil
}

// withProgram is WithProgram for the program of input field.
func (sp Space) withProgram(field string, argv []string, p scenarios.ClientProgram, given bool) (Space, error) {
	var leftOut []string
	p = p.Covered()
	prog := strconv.Quote(p.Program)
	switch {
	case !slices.Contains(p.Locks, sp.Lock):
		return sp, input.Errorf(field, prog, fmt.Sprintf("it implements the locks [%s] (its hello), not %s", strings.Join(p.Locks, " "), sp.Lock))
	case sp.Storage != "none" && !(slices.Contains(p.Ops, "write") && slices.Contains(p.StorageModes, sp.Storage)):
		return sp, input.Errorf(field, prog, fmt.Sprintf("it does not write the protected storage in mode %s (its hello: ops [%s], storage_modes [%s]); give {storage} none or one of its modes",
			sp.Storage, strings.Join(p.Ops, " "), strings.Join(p.StorageModes, " ")))
	}
	if fence := sp.fence(); fence != "" && !slices.Contains(p.Fences, fence) {
		return sp, input.Errorf(field, prog, fmt.Sprintf("it draws no %s fencing token for {storage} %s (its hello: fences [%s])", fence, sp.Storage, strings.Join(p.Fences, " ")))
	}
	drop := func(option, why string) {
		if i := slices.Index(sp.Options, option); i >= 0 {
			sp.Options = slices.Delete(slices.Clone(sp.Options), i, i+1)
			leftOut = append(leftOut, option+" ("+why+")")
		}
	}
	if !slices.Contains(p.Watchdogs, "token") {
		drop("watchdog", "its hello has no watchdog token")
	}
	if !p.CheckLease {
		drop("check_lease", "its hello does not say check_lease")
	}
	if !p.ClientClock {
		sp.noClientClock = true
		if i := slices.Index(sp.Kinds, "clock-jump"); i >= 0 && (sp.Nodes == 0 || sp.nodeClockless != "") {
			why := "it would step a client's clock, which the program's hello does not let move (no client_clock), and no node's clock can be moved"
			if given {
				return sp, input.Errorf("faults", "clock-jump", why)
			}
			sp.Kinds = slices.Delete(slices.Clone(sp.Kinds), i, i+1)
			leftOut = append(leftOut, "clock-jump ("+why+")")
		} else if i >= 0 {
			leftOut = append(leftOut, "a client's clock (its hello has no client_clock: clock jumps strike nodes only)")
		}
	}
	sp.ClientCmd, sp.LeftOut = argv, leftOut
	return sp, nil
}

// fence is the fencing-token source a candidate's story draws from: a
// PostgreSQL sequence for a fenced mode, unless the lock's own leases
// carry a token ("": none).
func (sp Space) fence() string {
	if spec, _ := clients.Lookup(sp.Lock); !spec.Fences && strings.HasPrefix(sp.Storage, "fenced") {
		return clients.FencePostgres
	}
	return ""
}

// WithBaseline sets the lock a finding must not break (Space.Baseline):
// one of the same servers as the hunted lock.
func (sp Space) WithBaseline(lock string) (Space, error) {
	base, err := clients.Lookup(lock)
	if err != nil {
		return sp, input.Errorf("baseline", strconv.Quote(lock), err.Error())
	}
	spec, _ := clients.Lookup(sp.Lock)
	if base.Backend != spec.Backend || scenarios.LockNodes(nil, base) != sp.Nodes {
		return sp, input.Errorf("baseline", lock, fmt.Sprintf("it runs on %s, and %s on %s: a baseline is played on the same servers",
			describeServers(base), sp.Lock, describeServers(spec)))
	}
	if lock == sp.Lock && len(sp.ClientCmd) == 0 {
		// A client program's lock against locksim's own of the same name
		// is a comparison; the same lock twice is not.
		return sp, input.Errorf("baseline", lock, "the hunted lock itself; name the lock whose defence it should keep")
	}
	sp.Baseline = lock
	return sp, nil
}

// describeServers says what a lock runs on ("5 redis node(s)").
func describeServers(s clients.Spec) string {
	if n := scenarios.LockNodes(nil, s); n > 0 {
		return fmt.Sprintf("%d %s node(s)", n, s.Backend)
	}
	return string(s.Backend)
}

// CheckedWords says what a finding breaks, in words: "plain storage",
// or "mutual exclusion alone" with no storage.
func (sp Space) CheckedWords() string {
	if sp.Storage == "none" {
		return "mutual exclusion alone"
	}
	return sp.Storage + " storage"
}

// FaultsSearched is the kinds searched as --faults takes them ("none"
// for the clients' timing alone).
func (sp Space) FaultsSearched() string {
	if len(sp.Kinds) == 0 {
		return "none"
	}
	return strings.Join(sp.Kinds, ",")
}

// has says whether the space searches kind k.
func (sp Space) has(k string) bool { return slices.Contains(sp.Kinds, k) }

// can says whether the space lets a candidate set option o.
func (sp Space) can(o string) bool { return slices.Contains(sp.Options, o) }

// links are the sets of a client's links a latency or a link fault may
// act on: its storage's, and its lock's servers'.
func (sp Space) links() [][]string {
	var out [][]string
	if sp.Storage != "none" {
		out = append(out, []string{nemesis.StorageNode})
	}
	if len(sp.lockLinks) > 0 {
		out = append(out, sp.lockLinks)
	}
	return out
}

// ring is the partition that gives each of n clients a different
// majority of the nodes, each overlapping the next (Jepsen's majorities
// ring): with five nodes client 1 keeps A, B, C, client 2 C, D, E and
// client 3 E, A, B. It returns the partitions, each client cut from the
// nodes outside its majority, and the node clients 1 and 2 share; nil
// under three nodes.
func (sp Space) ring(n int) ([]Fault, string) {
	if sp.Nodes < 3 {
		return nil, ""
	}
	m := sp.Nodes/2 + 1
	var out []Fault
	for c := 0; c < n; c++ {
		keep := map[int]bool{}
		for j := 0; j < m; j++ {
			keep[(c*(m-1)+j)%sp.Nodes] = true
		}
		var cut []string
		for i, name := range sp.lockLinks {
			if !keep[i] {
				cut = append(cut, name)
			}
		}
		out = append(out, Fault{Kind: "partition", Client: c + 1, Links: cut, At: Anchor{Event: Start}})
	}
	return out, sp.lockLinks[m-1]
}

// classicOrder puts the literature's shapes first: the pause after a
// grant, the clock jump, the crash with an early restart.
func classicOrder(k string) int {
	if i := slices.Index([]string{"pause", "clock-jump", "crash"}, k); i >= 0 {
		return i
	}
	return 3
}

// two is the workload of two clients: client 1 works w, client 2 asks at
// at and works briefly.
func two(w, at float64) []Turn { return []Turn{{At: 0, Work: w}, {At: at, Work: 0.2}} }

// classic are the shapes every hunt tries first, in this order: the
// failures the literature names, each at a size past the TTL: a pause of
// the holder after its grant; a clock fault or a crash with an early
// restart on the node two majorities share (on one node, on it; with no
// partition searched, on a majority); a failover before the lock key
// reached the replica; a pause while the acquire waits; the holder's
// lock connection dropped while it works; a client's clock stepped back
// under the lease check; and the TTL trap, work that outlasts the TTL
// with no fault (on three clients, a slow holder that releases late).
func (sp Space) classic() []Plan {
	var out []Plan
	read1 := Anchor{Client: 1, Event: Read}
	granted1 := Anchor{Client: 1, Event: Granted}
	kinds := slices.Clone(sp.Kinds)
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(classicOrder(a), classicOrder(b)) })
	for _, k := range kinds {
		kind, _ := nemesis.LookupKind(k)
		if kind.Generate == nil {
			continue
		}
		g := kind.Generate
		switch {
		case !g.OnNode:
			f := Fault{Kind: k, Client: 1, X: g.Classic, At: read1}
			if links := sp.links(); kind.Shape.Links && len(links) > 0 {
				f.Links = links[0] // the storage's link, else the lock's
			}
			out = append(out, Plan{Turns: two(0.2, 1.05), Faults: []Fault{f}})
		case sp.Nodes == 0 || sp.nodeClockless != "" && isClockKind(k):
			// No node to strike, or no clock of one to move.
		case sp.Nodes == 1:
			out = append(out, Plan{Turns: two(0.8, 0.4), Faults: []Fault{{Kind: k, Node: "A", X: g.Classic, At: granted1}}})
		case sp.has("partition"):
			// Client 2 asks once client 1, waiting node_timeout for the
			// nodes cut off, is granted and the shared node struck.
			ring, shared := sp.ring(2)
			out = append(out, Plan{Turns: two(0.8, 0.5), Faults: append(ring, Fault{Kind: k, Node: shared, X: g.Classic, At: granted1})})
		default: // a majority's clocks, or a majority crashed
			p := Plan{Turns: two(0.8, 0.4)}
			for i := 0; i < sp.Nodes/2+1; i++ {
				p.Faults = append(p.Faults, Fault{Kind: k, Node: scenarios.NodeName(i), X: g.Classic, At: granted1})
			}
			out = append(out, p)
		}
	}
	if sp.has("failover") && sp.has("replication-lag") && sp.can("replicas") {
		out = append(out, Plan{Turns: two(0.8, 0.4), Options: LockOptions{Replicas: true}, Faults: []Fault{
			{Kind: "replication-lag", Node: "A", At: Anchor{Event: Start}},
			{Kind: "failover", Node: "A", At: granted1}}})
	}
	if sp.has("pause") && sp.has("latency") && len(sp.lockLinks) > 0 {
		// Client 2 works long enough that its write and the holder's,
		// late, overlap; the nodes' answers wait out the pause.
		out = append(out, Plan{Turns: []Turn{{At: 0, Work: 0.2}, {At: 1.2, Work: 1}}, Options: LockOptions{NodeTimeout: 6}, Faults: []Fault{
			{Kind: "latency", Client: 1, Links: sp.lockLinks, X: 0.1, At: Anchor{Event: Start}},
			{Kind: "pause", Client: 1, X: 1.5, At: Anchor{Client: 1, Event: Asks}, After: 0.03}}})
	}
	if sp.has("drop") && len(sp.lockLinks) > 0 {
		out = append(out, Plan{Turns: two(2, 0.2), Faults: []Fault{{Kind: "drop", Client: 1, Links: sp.lockLinks, At: read1}}})
	}
	if sp.has("clock-jump") && sp.can("check_lease") && !sp.noClientClock {
		out = append(out, Plan{Turns: two(1.5, 1.05), Options: LockOptions{CheckLease: true},
			Faults: []Fault{{Kind: "clock-jump", Client: 1, X: 1.5, At: read1}}})
	}
	out = append(out, Plan{Turns: two(1.5, 1.05)})
	if sp.Clients >= 3 {
		out = append(out, Plan{Turns: []Turn{{At: 0, Work: 1.2}, {At: 1.05, Work: 1}, {At: 1.4, Work: 0.2}}})
	}
	return out
}

// swarm draws a plan from rng: each allowed kind in or out of the run
// (swarm testing: a fault left out cannot mask another), one to three
// faults, each with a value drawn from its kind's range, a target drawn
// among the clients, nodes or links it can strike (with the majorities
// ring, the shared node half the time), an anchor and an offset, and the
// clients' turns and the lock's options drawn.
func (sp Space) swarm(rng *rand.Rand) Plan {
	var in []string
	for _, k := range sp.Kinds {
		if rng.IntN(2) == 0 {
			in = append(in, k)
		}
	}
	n := 2
	if sp.Clients >= 3 && rng.IntN(3) == 0 {
		n = 3
	}
	p := Plan{Turns: []Turn{{At: 0, Work: round2(0.1 + rng.Float64()*1.4)}}}
	for c := 1; c < n; c++ {
		p.Turns = append(p.Turns, Turn{At: round2(p.Turns[c-1].At + 0.1 + rng.Float64()*1.4), Work: round2(0.1 + rng.Float64()*1.2)})
	}
	if sp.nodeTimeout > 0 && rng.IntN(5) == 0 {
		p.Options.NodeTimeout = 6
	}
	if sp.can("watchdog") && rng.IntN(4) == 0 {
		p.Options.Watchdog = true
	} else if sp.can("check_lease") && rng.IntN(3) == 0 {
		p.Options.CheckLease = true
	}
	shared := ""
	struck := map[string]bool{} // a kind strikes each target once
	if slices.Contains(in, "partition") && sp.Nodes >= 3 && rng.IntN(2) == 0 {
		var ring []Fault
		ring, shared = sp.ring(n)
		p.Faults = append(p.Faults, ring...)
		for _, f := range ring {
			struck[target(f)] = true
		}
	}
	if len(in) == 0 {
		return p
	}
	for k := 1 + rng.IntN(3); k > 0; k-- {
		f := sp.draw(rng, in[rng.IntN(len(in))], n, shared)
		if f == nil {
			continue
		}
		if f.kind().Shape.Replicas {
			p.Options.Replicas = true
			p.Options.Watchdog, p.Options.CheckLease = false, false
		}
		if struck[target(*f)] || struck[downs(*f)] {
			continue
		}
		struck[target(*f)] = true
		if d := downs(*f); d != "" {
			struck[d] = true
		}
		p.Faults = append(p.Faults, *f)
	}
	return p
}

// target is what a kind may strike once in a plan: a node, or a client
// (a second partition or delay of the same client's links would be a
// second toxic on a link that has one).
func target(f Fault) string { return f.Kind + " " + f.On() }

// downs is the node a fault takes down (a crash, a power loss, a
// failover: one each per node in a plan, for a node another fault killed
// is not there to kill, or to fail over), or "".
func downs(f Fault) string {
	if f.Node == "" || f.kind().Effect != history.EffectDown {
		return ""
	}
	return "down " + f.Node
}

// draw draws one fault of kind k on a plan of n clients; nil when the
// kind cannot strike it.
func (sp Space) draw(rng *rand.Rand, k string, n int, shared string) *Fault {
	f := Fault{Kind: k, At: sp.anchor(rng, n)}
	if rng.IntN(3) == 0 {
		f.After = round2(rng.Float64() * 0.5)
	}
	node := func() string {
		if shared != "" && rng.IntN(2) == 0 {
			return shared
		}
		return scenarios.NodeName(rng.IntN(sp.Nodes))
	}
	kind, _ := nemesis.LookupKind(k)
	if kind.Generate == nil { // placed by shape
		switch {
		case kind.Shape.Replicas:
			if !sp.can("replicas") {
				return nil
			}
			f.Node = node()
		default:
			links := sp.links()
			if kind.Shape.LockLinks {
				links = [][]string{sp.lockLinks}
			}
			if len(links) == 0 {
				return nil
			}
			f.Client = 1 + rng.IntN(n)
			f.Links = links[rng.IntN(len(links))]
			if len(f.Links) > 1 && rng.IntN(2) == 0 { // some of the nodes
				f.Links = slices.Clone(f.Links[:1+rng.IntN(len(f.Links)-1)])
			}
		}
		return &f
	}
	g := kind.Generate
	f.X = round2(g.Range[0] + rng.Float64()*(g.Range[1]-g.Range[0]))
	noNodeClock := sp.Nodes == 0 || sp.nodeClockless != ""
	switch {
	case g.OnNode && kind.Effect == history.EffectClock && (noNodeClock || rng.IntN(4) == 0) && !(sp.noClientClock && !noNodeClock):
		if !kind.Shape.ClientsToo || sp.noClientClock {
			return nil // a client's clock is only stepped, and only one the program lets move
		}
		f.Client = 1 + rng.IntN(n)
	case g.OnNode:
		if sp.Nodes == 0 {
			return nil
		}
		f.Node = node()
	default:
		f.Client = 1 + rng.IntN(n)
		if kind.Shape.Links { // the storage's link, or some of the lock's: an acquire then waits for those nodes
			links := sp.links()
			f.Links = links[rng.IntN(len(links))]
			if len(f.Links) > 1 && rng.IntN(2) == 0 {
				f.Links = slices.Clone(f.Links[:1+rng.IntN(len(f.Links)-1)])
			}
		}
	}
	return &f
}

// anchor draws when a fault strikes: most often while client 1 works
// (after its read), else at the start, while an acquire waits, after a
// grant or after client 1's release.
func (sp Space) anchor(rng *rand.Rand, n int) Anchor {
	switch r := rng.IntN(20); {
	case r < 8:
		return Anchor{Client: 1, Event: Read}
	case r < 11:
		return Anchor{Client: 1, Event: Granted}
	case r < 13:
		return Anchor{Event: Start}
	case r < 15:
		return Anchor{Client: 1, Event: Asks}
	case r < 17:
		return Anchor{Client: 1 + rng.IntN(n-1) + 1, Event: Asks}
	case r < 19:
		return Anchor{Client: 2, Event: Granted}
	default:
		return Anchor{Client: 1, Event: Released}
	}
}

// isClockKind says whether kind k moves a clock, as its kind says.
func isClockKind(k string) bool {
	kind, _ := nemesis.LookupKind(k)
	return kind.Effect == history.EffectClock
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// Candidate returns the i-th candidate of a hunt with this seed: the
// classic shapes first, then swarm draws, each from its own seed, so
// any candidate is reproducible alone.
func (sp Space) Candidate(seed int64, i int) Plan {
	if c := sp.classic(); i < len(c) {
		return c[i]
	}
	s := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i)
	return sp.swarm(rand.New(rand.NewPCG(s, s^0x5851f42d4c957f2d)))
}
