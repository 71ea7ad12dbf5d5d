// space.go is a hunt's search space (Space): the lock, its storage, the
// fault kinds and options a candidate may use, checked by NewSpace and
// narrowed to a client program's hello.

package hunt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
)

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
	// Unrealistic says what Realistic left out of the search, and why.
	Unrealistic []string
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
	// ownWatchdog says the hunted lock renews its leases by itself
	// (clients.Spec's OwnWatchdog): every candidate's clients run a token
	// watchdog, so that its baseline renews as it does.
	ownWatchdog bool
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

// SearchableKinds are Searchable's kinds in two lists: those drawn with
// a size (the registry's Generate: pause, clock-jump...) and those placed
// by shape (Place: partition, failover...).
func SearchableKinds() (sized, shaped []string) {
	for _, k := range nemesis.Kinds() {
		switch {
		case k.Generate != nil:
			sized = append(sized, k.Name)
		case k.Place != nil:
			shaped = append(shaped, k.Name)
		}
	}
	return sized, shaped
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
	sp := Space{Lock: lock, Storage: storage, TTL: ttl, Nodes: scenarios.LockNodes(nil, spec), Clients: MostClients, expires: !spec.NoExpiry, ownWatchdog: spec.OwnWatchdog != ""}
	if most != 0 {
		if most < FewestClients || most > MostClients {
			return Space{}, input.Errorf("clients", strconv.Itoa(most), fmt.Sprintf("expected %d or %d", FewestClients, MostClients))
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
		clockless = backends.DefaultClockless(b)
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
	if spec := clients.Registered(sp.Lock); !spec.Fences && strings.HasPrefix(sp.Storage, "fenced") {
		return clients.FencePostgres
	}
	return ""
}

// Realistic leaves out of the search every fault kind whose sizes it
// draws are all outside what real machines have (nemesis.Kind's
// DrawsUnrealistic: a clock-drift), saying so in Unrealistic: what such a
// hunt finds is a finding sim findings can count.
func (sp Space) Realistic() Space {
	var kept []string
	for _, name := range sp.Kinds {
		if k, ok := nemesis.LookupKind(name); ok {
			if why := k.DrawsUnrealistic(); why != "" {
				sp.Unrealistic = append(sp.Unrealistic, fmt.Sprintf("%s (%s)", name, why))
				continue
			}
		}
		kept = append(kept, name)
	}
	sp.Kinds = kept
	return sp
}

// A candidate has FewestClients to MostClients clients; MostClients is
// the default of sim hunt --clients and of the findings' hunts.
const (
	FewestClients = 2
	MostClients   = 3
)

// WithBaseline sets the lock a finding must not break (Space.Baseline):
// one of the same servers as the hunted lock.
func (sp Space) WithBaseline(lock string) (Space, error) {
	base, err := clients.Lookup(lock)
	if err != nil {
		return sp, input.Errorf("baseline", strconv.Quote(lock), err.Error())
	}
	spec := clients.Registered(sp.Lock)
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
