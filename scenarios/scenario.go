// Package scenarios holds the scenario catalogue (one YAML file each,
// embedded in the binary) and the strict loader that turns a file into a
// Scenario or into one clear error naming the file, line and field.
package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/promise"
	"github.com/locksim/locksim/storage"
)

// Verdicts a scenario can expect.
var Verdicts = []checker.Verdict{checker.Safe, checker.Unsafe, checker.Leaked, checker.Hung}

// verdictNames are Verdicts as strings, for messages and the schema.
func verdictNames() []string {
	out := make([]string, len(Verdicts))
	for i, v := range Verdicts {
		out[i] = string(v)
	}
	return out
}

// ServerBackends are the values of a scenario's backend field ("" is local).
var ServerBackends = []string{"", env.HostLocal, env.HostDocker}

// The values of the scenario's other closed fields ("" is their default):
// the loader checks against them and the schema (schema.go) lists them.
var (
	StorageModes = storageModes()
	FenceSources = []string{"", clients.FencePostgres, clients.FenceRedisIncr, clients.FenceRedlockIncr}
	Watchdogs    = []string{"", "token", "pexpire"}
	WorkDists    = []string{"", "uniform", "exponential", "fixed"}
)

// modeList names the storage modes in words ("plain, fenced, ... or
// idempotent"), from the list package storage registers.
func modeList() string {
	m := StorageModes[1:]
	return strings.Join(m[:len(m)-1], ", ") + " or " + m[len(m)-1]
}

// storageModes are storage's modes, and "" for none.
func storageModes() []string {
	out := []string{""}
	for _, m := range storage.Modes() {
		out = append(out, string(m))
	}
	return out
}

// DefaultMargin is a story's margin unless it gives one: how late the
// harness may run before the story's timing can no longer be trusted. The
// stories leave at least this much between the events whose order they
// depend on (a sleep of 1.1s past a 1s TTL).
const DefaultMargin = 100 * time.Millisecond

// Scenario is one story of the Redlock debate, as data.
type Scenario struct {
	// Name is unique in the catalogue; families share a prefix
	// (redlock-..., postgres-...) so a regex selects them.
	Name string `yaml:"name"`
	// Title is one line, the story in a sentence: the first of `sim explain` and of the narration.
	Title string `yaml:"title"`
	// Source cites the published passage the story comes from: author,
	// title, year, address and section.
	Source string `yaml:"source"`
	// Explain is the paragraph `sim explain` prints: what happens and why.
	Explain string `yaml:"explain"`
	// Fault is a short description of the fault, for `sim list`.
	Fault string `yaml:"fault"`
	// Tests is the property the story tests (promise.Property: a
	// token-checked release, validity checked at acquire, ...): sim
	// findings counts the story against a lock only where the lock
	// promises it. Empty: exclusion, mutual exclusion while the lease is
	// valid, which every lock promises.
	Tests promise.Property `yaml:"tests"`
	// Conditions are what the story runs on and with: the lock, its
	// servers, the clients, the storage and the timing. A counterfactual
	// block may replace any of them.
	Conditions `yaml:",inline"`
	// Expected is the verdict the story should end in: safe, unsafe,
	// leaked (a lock held with no live holder, or not granted for too
	// long) or hung (a call that never returned within its bound).
	Expected checker.Verdict `yaml:"expected"`
	// Steps is the story, in order.
	Steps []Step `yaml:"steps"`
	// Counterfactual is the same story without its cause, or with its
	// defence removed: `sim run --counterfactual` plays it too and
	// requires the verdict to flip (see story.go).
	Counterfactual *Counterfactual `yaml:"counterfactual"`
	// FixedIn names, for the lock's servers, the first version that has
	// the story's bug fixed (etcd: "3.5"): played on that version or a
	// later one (sim run --server-version), the story is expected to end
	// safe, its steps may go otherwise than they tell, and no
	// counterfactual is played. Empty: every version is expected alike.
	// Only for servers that come in several versions here (etcd), in a
	// story that does not end safe.
	FixedIn map[string]string `yaml:"fixed_in"`
	// Generator makes this a generator scenario instead of a scripted
	// story: the clients loop acquire -> read-modify-write -> release while
	// a schedule drawn from the seed injects the fault (see Generator).
	// A scenario has either steps or a generator.
	Generator *Generator `yaml:"generator"`

	// File is where the scenario was loaded from.
	File string `yaml:"-"`
	// IsCounterfactual marks the changed story CounterfactualScenario
	// builds: its steps assert nothing.
	IsCounterfactual bool `yaml:"-"`
	// givenAt is the set of fields the scenario gives, by yaml name, each
	// with its line in File for errors ("file:line: field: ..."); 0 for a
	// field given other than by a file (set in Go: Build). A field not in
	// it was not given, though a default may have filled it in.
	givenAt map[string]int
	// resolved says Resolve made it: its defaults given, validated, its
	// counterfactual built (cf).
	resolved bool
	// cf is the counterfactual story, built once by Resolve.
	cf *Scenario
	// own is the lock the story was told with, once Resolve has put
	// another in it (OwnLock).
	own string
	// compared marks a comparison of locks (Changes.Compare).
	compared bool
	// settings are the fields of the file that set its servers (nil:
	// none), decoded by the lock's backend's struct (settings.go).
	settings *yaml.Node
}

// Conditions are the fields of a scenario that say what its story runs on
// and with (everything but its text, its verdict, its steps or generator
// and its counterfactual); a counterfactual block may replace any of them.
type Conditions struct {
	// Lock names a registered lock algorithm (see `sim locks`).
	Lock string `yaml:"lock"`
	// Nodes is how many servers of the lock's backend to start (Redis
	// nodes, etcd members), named A, B, C... Default: what the lock's
	// registration says (5 for the Redlock family), else 1; 0 for a
	// PostgreSQL lock, which has one server (nodes set for it are Redis
	// nodes, for a Redis fence).
	Nodes int `yaml:"nodes"`
	// Clients is how many client processes take part. Default 2.
	Clients int `yaml:"clients"`
	// TTL is the lease time clients ask for. Default 10s.
	TTL Duration `yaml:"ttl"`
	// NodeTimeout bounds each request to one node. Default 200ms.
	NodeTimeout Duration `yaml:"node_timeout"`
	// Key is the lock's name. Default "L".
	Key string `yaml:"key"`
	// Storage is the protected resource, a counter row in PostgreSQL
	// written by `write` steps: plain, fenced (refuses a fence lower than
	// one it accepted, and a read raises the fence), fenced-write (the
	// fence checked at the write only, a mutant), token-cas (writes only
	// while the row carries this lease's token) or idempotent (unique
	// (job, period)). Empty: none.
	Storage string `yaml:"storage"`
	// Fence is the fencing-token source handed out with each grant:
	// postgres (a sequence), redis-incr (INCR on node A) or redlock-incr
	// (INCR on every node that granted, the largest count). Empty: none.
	Fence string `yaml:"fence"`
	// Watchdog renews each lease in the background while the client
	// lives: token (only while the key holds this lease's token) or
	// pexpire (plain PEXPIRE, whoever holds the key). Empty: no renewal.
	Watchdog string `yaml:"watchdog"`
	// CheckLease makes every write check, just before it writes, that its
	// lease is still valid as the lock measures it (by the wall clock for
	// redlock-wallclock, else on the monotonic clock; for zookeeper, while
	// its session is connected, not suspended), and not write if
	// not: the careful client of the debate. With a watchdog, the lease
	// checked is the one it last renewed, and one whose renewal found it
	// gone fails the check.
	CheckLease bool `yaml:"check_lease"`
	// WatchdogEvery is the renewal period. Default TTL/3.
	WatchdogEvery Duration `yaml:"watchdog_every"`
	// WatchdogMax bounds the watchdog to that many renewals of a lease,
	// after which it stops and the lease runs out: the limit the Redis
	// page asks for. 0: no bound. Only the harness's own worker bounds
	// its watchdog (not with client_cmd).
	WatchdogMax int `yaml:"watchdog_max"`
	// JobOnce makes a scheduled job's first effect (the job table's row a
	// write with a period writes) idempotent: the row is written under a
	// unique (job, period) key, as an idempotency key does, so a second run
	// of the period writes nothing. Only the harness's own worker writes a
	// job's row (not with client_cmd).
	JobOnce bool `yaml:"job_once"`
	// Margin is how late the harness may run before the story's timing
	// cannot be trusted (default 100ms): a run that stalled longer ends
	// unknown, never with a verdict it did not earn.
	Margin Duration `yaml:"margin"`
	// MaxGap is the longest the lock may stay unavailable while clients
	// ask for it: a span longer than this from the last grant (or the
	// first attempt) to an acquire refused is a liveness failure, and the
	// verdict is leaked. For a story that claims the lock must come free
	// (a holder that hangs but lives, a partition that heals). 0: not
	// checked.
	MaxGap Duration `yaml:"max_gap"`
	// ClientCmd runs each client as this program and its arguments (argv)
	// instead of the harness's own Go worker: a client in any language
	// that speaks locksim worker protocol v1 or v2 (docs/protocol.md);
	// the story runs only if the program's hello covers what it needs.
	// Empty: the Go worker.
	ClientCmd []string `yaml:"client_cmd"`
	// ServerBackend is where the servers run: local (child processes, the
	// default) or docker (containers; `sim run --backend` overrides it).
	ServerBackend string `yaml:"backend"`
	// Settings are the settings of the lock's servers, written as fields
	// of the scenario (persistence: always, pgbouncer: session): its
	// backend's own struct (backends.RedisSettings...), decoded strictly
	// (settings.go). Nil takes the backend's defaults.
	Settings backends.Settings `yaml:"-"`
}

// Generator is the load and fault schedule of a generator scenario: every
// client loops acquire -> read-modify-write (working for a time drawn from
// the work distribution) -> release until Duration has passed, and each
// trial injects Fault Faults times, at times and on targets drawn from the
// seed. The fault's size is the field named after its drawn parameter
// (pause, jump, delay, drift: Size).
type Generator struct {
	// Duration is how long the clients loop in one trial. Default 1s.
	Duration Duration `yaml:"duration"`
	// Work is the mean time a client works between its read and its write.
	// Default 2ms.
	Work Duration `yaml:"work"`
	// WorkDist is the distribution of the work time: uniform (default;
	// from Work/2 to 3*Work/2), exponential (mean Work) or fixed.
	WorkDist string `yaml:"work_dist"`
	// Backoff bounds the wait after a refused acquire, drawn uniformly
	// from 0 to Backoff, so that contending clients do not spin in lock
	// step. Default 1ms.
	Backoff Duration `yaml:"backoff"`
	// MaxCycles stops each client after that many critical sections
	// (0: only Duration bounds the loop).
	MaxCycles int `yaml:"max_cycles"`
	// Fault is what the schedule injects: pause (SIGSTOP a client during
	// its critical section, for pause), clock-jump (move a node's clock by
	// jump while a client holds the lock), latency (delay a client's
	// storage link by delay during its critical section), clock-drift (a
	// node's clock runs at drift times real speed for the whole trial) or
	// none.
	Fault string `yaml:"fault"`
	// Faults is how many faults one trial injects. Default 1 (0 with
	// fault none).
	Faults int `yaml:"faults"`
	// Size is the one parameter the schedule draws for Fault, written
	// under that parameter's name (pause: 300ms, jump: 300ms, delay:
	// 300ms, drift: 1.5; nemesis.Drawn): nanoseconds for a duration, the
	// number for a rate. The schema lists those names as fields.
	Size float64 `yaml:"-"`
	// sizeOf is the fault whose size the file gave ("" if none).
	sizeOf string
	// Trials is how many trials `sim run` plays (default 1); `sim sweep`
	// sets its own with --trials. A trial the machine was too slow for
	// (unknown) is played again with its seed, up to 3 times in all.
	Trials int `yaml:"trials"`

	// givenAt is the set of fields the block gives, by yaml name, the
	// drawn size under its parameter's name: each with its line in the
	// file, 0 when built in Go (see Scenario.givenAt).
	givenAt map[string]int
}

// GeneratorFaults lists the values of Generator.Fault: every fault kind
// nemesis lets a generator draw, and none.
var GeneratorFaults = generatorFaults()

func generatorFaults() []string {
	var out []string
	for _, k := range nemesis.GeneratedKinds() {
		out = append(out, k.Name)
	}
	return append(out, "none")
}

// Generated is how the schedule draws the generator's fault (nil for
// none).
func (g Generator) Generated() *nemesis.Generated {
	k, ok := nemesis.LookupKind(g.Fault)
	if !ok {
		return nil
	}
	return k.Generate
}

// sizeField is the field the file gave the size under.
func (g Generator) sizeField() string {
	if k, ok := nemesis.LookupKind(g.sizeOf); ok && k.Generate != nil {
		return k.Generate.Name
	}
	return ""
}

// ActsOnLinks says whether the generator's fault acts on the clients'
// links (then the clients go through their proxies; else straight to the
// servers, at the loopback floor).
func (g Generator) ActsOnLinks() bool {
	k, ok := nemesis.LookupKind(g.Fault)
	return ok && k.Generate != nil && k.Effect == history.EffectNetwork
}

// Step is one step of a scripted story.
type Step struct {
	// Do is the action: see Actions.
	Do string `yaml:"do"`
	// Say is the narration printed before the step (and kept in the history).
	Say string `yaml:"say"`
	// Client is the client the step acts on or as (1-based).
	Client int `yaml:"client"`
	// Work is how long a write works between its read and its write.
	Work Duration `yaml:"work"`
	// For is how long a sleep lasts.
	For Duration `yaml:"for"`
	// TTL overrides the scenario's TTL for this acquire or extend.
	TTL Duration `yaml:"ttl"`
	// Key is the lock's name for an acquire, release, extend or write
	// (default: the scenario's key): two jobs with two locks.
	Key string `yaml:"key"`
	// Wait lets an acquire wait up to this long for a held lock, the way
	// its library waits (a blocking call, or its retries), instead of
	// trying once. Only a lock that waits can play it (`sim locks`; a
	// client program's hello says acquire_wait).
	Wait Duration `yaml:"wait"`
	// Async lets the story go on without waiting for the client's reply;
	// a later `wait` step collects it.
	Async bool `yaml:"async"`
	// Unlocked lets a write go ahead though the client holds no lease (a
	// story about an unlocked write). Without it the client refuses to
	// write, extend or release without a lease, and sends nothing.
	Unlocked bool `yaml:"unlocked"`
	// At anchors a pause of a client on an event inside that client
	// instead of the step's turn in the story: lease-checked strikes the
	// moment the client's check of its lease before a write has passed
	// (check_lease), before the write goes out. The write is the client's
	// latest, sent async before this step; the harness's own worker stops
	// itself there (SIGSTOP), the step waits until it has, and `for`
	// counts from then. Not with client_cmd.
	At string `yaml:"at"`
	// Period makes a write one run of a scheduled job for this schedule
	// period (09:00, say): right after its read, before its work, the
	// client writes the row (job, period) to the storage's job table, the
	// run's first effect, which stays whatever the run does next. The
	// checker counts the rows: two for one period are the job run twice
	// (unsafe), however the counter came out. Not with client_cmd.
	Period string `yaml:"period"`

	// Expect is what must have happened (see story.go): how the step's
	// operation ended, or the client's last renewal. A run that
	// contradicts it ends as a harness failure, never as a verdict.
	Expect string `yaml:"expect"`
	// Reason is the reason a refusal must carry (history's Reason names).
	Reason string `yaml:"reason"`
	// GrantedBy lists exactly the nodes that must have granted an acquire.
	GrantedBy []string `yaml:"granted_by"`
	// FencingToken is the fencing token a granted acquire must carry.
	// (Not the scenario's fence, the token source.)
	Fence int64 `yaml:"fencing_token"`
	// Read is the counter value a write must have read: the order of the
	// critical sections, which a lost update depends on.
	Read *int64 `yaml:"read"`
	// Cause marks a step the counterfactual run leaves out.
	Cause bool `yaml:"cause"`
	// Counterfactual gives fields that replace this step's own in the
	// counterfactual run (for instance for: 0s, a restart at once). The
	// loader keeps the changed step whole here: this step with them
	// replaced.
	Counterfactual *Step `yaml:"counterfactual"`

	// Params are a fault step's fields (client, node, for, by...),
	// decoded into its kind's own parameter struct (nemesis.Spec); nil
	// for the other actions. The fields each kind takes are listed in
	// docs/scenarios.md.
	Params any `yaml:"-"`
	// Line is the step's line in the file.
	Line int `yaml:"-"`
	// givenAt is the set of fields the step gives, by yaml name, its
	// fault's own (Params) included: each with its line in the file, 0
	// when built in Go (see Scenario.givenAt; an error on a field at 0
	// names the step's Line).
	givenAt map[string]int
	// told is the step's number in the story it comes from, for a step
	// of a counterfactual story (0: its own place); changed says the
	// counterfactual changed it.
	told    int
	changed bool
}

// Action describes one value of Step.Do.
type Action struct {
	// Name is the value of `do`.
	Name string
	// Doc is one line for help text.
	Doc string
	// Needs lists the step fields the action requires.
	Needs []string
}

// Actions is every step action the runner knows: the clients' and the
// story's own, then every fault kind nemesis registers (one file each).
var Actions = append([]Action{
	{"say", "print the narration and go on", nil},
	{"acquire", "the client tries once to take the lock", []string{"client"}},
	{"release", "the client releases its lease", []string{"client"}},
	{"extend", "the client renews its lease", []string{"client"}},
	{"wait", "wait for the client's async operation to finish", []string{"client"}},
	{"write", "the client reads the protected counter, works for `work`, writes counter+1 with its fence and token", []string{"client"}},
	{"kill", "kill -9 the client process; its leases die with it", []string{"client"}},
	{"sleep", "let `for` pass", []string{"for"}},
	{"heal", "heal every fault injected so far", nil},
	{"renewal", "assert how the client's watchdog's latest renewal went (expect: ok or refused)", []string{"client", "expect"}},
}, faultActions()...)

// faultActions lists nemesis's fault kinds as actions.
func faultActions() []Action {
	var out []Action
	for _, k := range nemesis.Kinds() {
		out = append(out, Action{k.Name, k.Doc, k.Needs})
	}
	return out
}

// Aim is what the step acts on: a fault's client, node and links (from
// its parameters), or the client of a client's action.
func (s Step) Aim() nemesis.Aim {
	if a, ok := s.Params.(nemesis.Aimed); ok {
		return a.Aim()
	}
	return nemesis.Aim{Client: s.Client}
}

// Fault is what the step's fault does, as its fault would record it
// (nemesis.Fault.Fields); ok is false for a step that injects no fault
// (an operation, a sleep, a resume).
func (s Step) Fault() (f history.FaultFields, ok bool) {
	k, found := nemesis.LookupKind(s.Do)
	if !found || k.New == nil || s.Params == nil {
		return f, false
	}
	return k.New(s.Params).Fields(), true
}

// LookupAction finds an action by name.
func LookupAction(name string) (Action, bool) {
	for _, a := range Actions {
		if a.Name == name {
			return a, true
		}
	}
	return Action{}, false
}

// Duration is a time.Duration written as "500ms", "10s", "1m".
type Duration struct{ time.Duration }

// String prints the duration as Go does.
func (d Duration) String() string { return d.Duration.String() }

// ActionNames lists the actions for error messages.
func ActionNames() []string {
	var out []string
	for _, a := range Actions {
		out = append(out, a.Name)
	}
	return out
}

// DefaultTTL is a story's lease when it gives no ttl.
const DefaultTTL = 10 * time.Second

// DefaultNodeTimeout bounds each request to one node when a scenario's
// node_timeout does not say: the locks' own default.
const DefaultNodeTimeout = clients.DefaultNodeTimeout

// NodeName is the letter of the i-th node (0 -> A).
func NodeName(i int) string { return backends.NodeName(i) }

// Describe is a one-line account of a step, for narration and errors.
func (s Step) Describe() string {
	switch s.Do {
	case "write":
		return fmt.Sprintf("client %d: read-modify-write (work %v)", s.Client, s.Work)
	case "acquire", "release", "extend", "wait":
		return fmt.Sprintf("client %d: %s", s.Client, s.Do)
	case "kill":
		return fmt.Sprintf("kill client %d", s.Client)
	case "sleep":
		return fmt.Sprintf("sleep %v", s.For)
	}
	if k, ok := nemesis.LookupKind(s.Do); ok && s.Params != nil {
		if k.New == nil {
			who := fmt.Sprintf("client %d", s.Aim().Client)
			if n := s.Aim().Node; n != "" {
				who = n
			}
			return s.Do + " " + who
		}
		f := k.New(s.Params)
		return fmt.Sprintf("%s on %s (%s)", s.Do, f.On(), f.Detail())
	}
	return s.Do
}

// ClockOnNode says a step of the story moves a server's clock (a clock
// fault on a node): its servers must be ones a clock fault reaches.
func (s *Scenario) ClockOnNode() bool {
	for _, st := range s.Steps {
		if k, ok := nemesis.LookupKind(st.Do); ok && k.Effect == history.EffectClock && st.Aim().Node != "" {
			return true
		}
	}
	return false
}

// FaultShape is what the story's faults strike, one entry per fault step
// of a kind a hunt can place, sorted: the kind and "node" or "client"
// ("clock-jump node", "partition client"). Sizes, times and which node
// or client are left out: two stories of the same shape fail the same way.
func (s *Scenario) FaultShape() []string {
	var out []string
	for _, st := range s.Steps {
		k, ok := nemesis.LookupKind(st.Do)
		if !ok || !k.Placeable() {
			continue
		}
		target := "client"
		if st.Aim().Node != "" {
			target = "node"
		}
		out = append(out, st.Do+" "+target)
	}
	slices.Sort(out)
	return out
}

// TellerOf is the catalogue story whose schedule a found story's fault
// shape is, and that ends as it did (verdict): its faults are the
// story's, or among them (a shrink takes away what the failure does not
// need); a story of lock first, then the fewest faults beyond, then by
// name. "" when no story has them all and ends so (postgres-xact shows
// its lock surviving the drop a hunt found breaking postgres-session: it
// does not tell that find).
func TellerOf(found []string, verdict checker.Verdict, lock string, catalogue []*Scenario) string {
	best, bestLock, bestExtra := "", false, 0
	for _, sc := range catalogue {
		if sc.Generator != nil || sc.Expected != verdict {
			continue
		}
		shape := sc.FaultShape()
		if len(shape) < len(found) || !containsAll(shape, found) {
			continue
		}
		own, extra := sc.Lock == lock, len(shape)-len(found)
		if best == "" || (own && !bestLock) || (own == bestLock && extra < bestExtra) {
			best, bestLock, bestExtra = sc.Name, own, extra
		}
	}
	return best
}

// DefenceOf is the property a found story breaks in a lock that its
// baseline keeps: the property (Tests) of the catalogue story told with
// the baseline that ends safe under faults all among the found story's,
// the one with the most of them (then by name); "" when none does. A
// hunt's find of a pause while the acquire waits, against redlock, breaks
// what redlock-pause-during-acquire tests: validity checked at acquire.
func DefenceOf(found []string, baseline string, catalogue []*Scenario) promise.Property {
	best, bestName, bestLen := promise.Property(""), "", 0
	for _, sc := range catalogue {
		shape := sc.FaultShape()
		if sc.Generator != nil || sc.Lock != baseline || sc.Expected != checker.Safe || sc.Tests == "" || len(shape) == 0 || !containsAll(found, shape) {
			continue
		}
		if len(shape) > bestLen || (len(shape) == bestLen && sc.Name < bestName) {
			best, bestName, bestLen = sc.Tests, sc.Name, len(shape)
		}
	}
	return best
}

// containsAll says every entry of sub is in set, as many times (both
// sorted).
func containsAll(set, sub []string) bool {
	i := 0
	for _, want := range sub {
		for i < len(set) && set[i] < want {
			i++
		}
		if i == len(set) || set[i] != want {
			return false
		}
		i++
	}
	return true
}
