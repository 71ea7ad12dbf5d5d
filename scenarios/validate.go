// validate.go checks a decoded scenario: its fields, each step and its
// generator, each error naming the field's line.

package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/promise"
)

// errAt builds an Error for a top-level field.
func (s *Scenario) errAt(field, format string, args ...any) error {
	return &Error{File: s.File, Line: s.givenAt[field], Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (s *Scenario) validate() error {
	if s.Name == "" {
		return s.errAt("name", "missing: every scenario needs a name")
	}
	if !validName.MatchString(s.Name) {
		return s.errAt("name", "expected lower-case letters, digits, '-', '.', '/', got %q", s.Name)
	}
	if s.Lock == "" {
		return s.errAt("lock", "missing: name a lock (%s)", strings.Join(clients.Names(), ", "))
	}
	spec, err := clients.Lookup(s.Lock)
	if err != nil {
		return s.errAt("lock", "%v", err)
	}
	if s.backend() == nil {
		return s.errAt("lock", "lock %s runs on backend %q, which package backends does not register", s.Lock, spec.Backend)
	}
	if !slices.Contains(Verdicts, s.Expected) {
		return s.errAt("expected", "expected one of %s, got %q", strings.Join(verdictNames(), ", "), s.Expected)
	}
	if s.Nodes < 0 || s.Nodes > 9 {
		return s.errAt("nodes", "expected 1 to 9 nodes, got %d", s.Nodes)
	}
	if s.Clients < 1 || s.Clients > 64 {
		return s.errAt("clients", "expected 1 to 64 clients, got %d", s.Clients)
	}
	if s.TTL.Duration <= 0 {
		return s.errAt("ttl", "expected a positive duration, got %v", s.TTL)
	}
	if s.TTL.Duration < spec.MinTTL && !s.compared {
		return s.errAt("ttl", "%s's leases last at least %v: a ttl of %v would be told as one lease and run as another", s.Lock, spec.MinTTL, s.TTL)
	}
	if s.Margin.Duration < 0 {
		return s.errAt("margin", "expected a positive duration, got %v", s.Margin)
	}
	if s.MaxGap.Duration < 0 {
		return s.errAt("max_gap", "expected a positive duration, got %v", s.MaxGap)
	}
	if s.NodeTimeout.Duration <= 0 {
		return s.errAt("node_timeout", "expected a positive duration, got %v", s.NodeTimeout)
	}
	if !contains(StorageModes, s.Storage) {
		return s.errAt("storage", "expected %s, got %q", modeList(), s.Storage)
	}
	if !contains(FenceSources, s.Fence) {
		return s.errAt("fence", "expected postgres, redis-incr or redlock-incr, got %q", s.Fence)
	}
	if clients.FenceBackend(s.Fence) == clients.RedisBackend && s.Nodes == 0 {
		return s.errAt("fence", "%s needs Redis nodes: set nodes", s.Fence)
	}
	if !contains(Watchdogs, s.Watchdog) {
		return s.errAt("watchdog", "expected token or pexpire, got %q", s.Watchdog)
	}
	if err := s.validateSettings(); err != nil { // settings.go
		return err
	}
	if s.Tests != "" {
		if _, err := promise.Parse(string(s.Tests)); err != nil {
			return s.errAt("tests", "%v", err)
		}
	}
	if err := s.validateFixedIn(); err != nil { // fixed.go
		return err
	}
	if err := s.backend().Check(s.ServerOptions()); err != nil {
		return s.errAt(err.Field, "%s", err.Msg)
	}
	if !contains(ServerBackends, s.ServerBackend) {
		return s.errAt("backend", "expected local or docker (where the servers run), got %q", s.ServerBackend)
	}
	if s.WatchdogEvery.Duration < 0 {
		return s.errAt("watchdog_every", "expected a positive duration")
	}
	switch {
	case s.WatchdogMax < 0:
		return s.errAt("watchdog_max", "expected a number of renewals, 0 or more, got %d", s.WatchdogMax)
	case s.WatchdogMax > 0 && s.Watchdog == "":
		return s.errAt("watchdog_max", "bounds the watchdog's renewals; the story has no watchdog (watchdog: token or pexpire)")
	case s.WatchdogMax > 0 && len(s.ClientCmd) > 0:
		return s.errAt("watchdog_max", "only the harness's own worker bounds its watchdog; a client program (client_cmd) cannot yet")
	}
	if s.JobOnce && !s.RunsJobs() {
		return s.errAt("job_once", "makes a scheduled job's first effect idempotent; the story runs no job (no write with a period)")
	}
	// A counterfactual may give client_cmd: [] (the harness's own worker
	// plays it, as a hunt's baseline does).
	if _, given := s.givenAt["client_cmd"]; given && !(s.IsCounterfactual && len(s.ClientCmd) == 0) {
		if err := s.validateClientCmd(); err != nil { // external.go
			return err
		}
	}
	if s.Generator != nil {
		if len(s.Steps) > 0 {
			return s.errAt("steps", "a generator scenario has no steps: remove steps or generator")
		}
		if err := s.validateGenerator(); err != nil {
			return err
		}
		return s.validateCounterfactual()
	}
	if len(s.Steps) == 0 {
		return s.errAt("steps", "missing: a scripted scenario needs at least one step (or a generator)")
	}
	for i := range s.Steps {
		if err := s.validateStep(i); err != nil {
			return err
		}
	}
	return s.validateCounterfactual()
}

func (s *Scenario) validateStep(i int) error {
	st := s.Steps[i]
	at := func(field, format string, args ...any) error {
		line := st.givenAt[field]
		if line == 0 {
			line = st.Line
		}
		return &Error{File: s.File, Line: line, Field: fmt.Sprintf("steps[%d].%s", i, field), Msg: fmt.Sprintf(format, args...)}
	}
	a, ok := LookupAction(st.Do)
	if !ok {
		return at("do", "unknown action %q (known: %s)", st.Do, strings.Join(ActionNames(), ", "))
	}
	for _, need := range a.Needs {
		if _, given := st.givenAt[need]; !given {
			return at(need, "missing: %q needs %s", st.Do, need)
		}
	}
	aim := st.Aim()
	if _, given := st.givenAt["client"]; given && (aim.Client < 1 || aim.Client > s.Clients) {
		return at("client", "expected a client from 1 to %d, got %d", s.Clients, aim.Client)
	}
	isNode := func(n string) bool { return len(n) == 1 && n[0] >= 'A' && int(n[0]-'A') < s.Nodes }
	servers, _ := s.backend().Shape(s.Nodes, s.TTL.Duration) // "3 etcd member(s)"
	kind, isKind := nemesis.LookupKind(st.Do)
	pgLock := false
	if spec, err := clients.Lookup(s.Lock); err == nil {
		pgLock = spec.Backend == clients.PostgresBackend
	}
	onPostgres := aim.Node == nemesis.PGNode && isKind && kind.OnPostgres && pgLock
	if aim.Node != "" && !isNode(aim.Node) && !onPostgres {
		if pgLock {
			return at("node", "unknown node %q: this scenario's lock server is PostgreSQL, node %s, which %s does not strike (%s does)",
				aim.Node, nemesis.PGNode, st.Do, strings.Join(postgresKinds(), ", "))
		}
		return at("node", "unknown node %q: this scenario has %s, A to %s", aim.Node, servers, NodeName(max(s.Nodes-1, 0)))
	}
	for _, n := range aim.Links {
		// A client's links: to the lock's nodes (Redis nodes, etcd or
		// ZooKeeper members), to PostgreSQL (pg) and to the protected
		// storage (storage).
		if !isNode(n) && n != nemesis.PGNode && n != nemesis.StorageNode {
			return at("links", "unknown node %q: expected one of the %s (A to %s), %s or %s", n, servers, NodeName(max(s.Nodes-1, 0)), nemesis.PGNode, nemesis.StorageNode)
		}
	}
	if isKind && kind.Check != nil {
		if err := kind.Check(st.Params, nemesis.Facts{NodeClockless: s.backend().NodeClockless(), Nodes: s.Nodes, Clients: s.Clients, Replicas: backends.Replicated(s.Settings), Persistent: backends.Persistent(s.Settings)}); err != nil {
			return at(err.Field, "%s", err.Msg)
		}
	}
	if st.Work.Duration < 0 {
		return at("work", "expected a positive duration, got %v", st.Work)
	}
	if st.Do == "write" && s.Storage == "" {
		return at("do", "a write needs protected storage: set storage (%s)", modeList())
	}
	if st.For.Duration < 0 {
		return at("for", "expected a positive duration, got %v", st.For)
	}
	if st.TTL.Duration < 0 {
		return at("ttl", "expected a positive duration, got %v", st.TTL)
	}
	return s.validateStory(i, at)
}

// validateGenerator checks a generator block and fills in its defaults.
func (s *Scenario) validateGenerator() error {
	g := s.Generator
	at := func(field, format string, args ...any) error {
		line := g.givenAt[field]
		if line == 0 {
			line = s.givenAt["generator"]
		}
		return &Error{File: s.File, Line: line, Field: "generator." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Storage == "" {
		return s.errAt("storage", "missing: a generator scenario needs protected storage (%s)", modeList())
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"duration", g.Duration.Duration}, {"work", g.Work.Duration}, {"backoff", g.Backoff.Duration}} {
		if d.v < 0 {
			return at(d.field, "expected a positive duration, got %v", d.v)
		}
	}
	if g.Duration.Duration == 0 {
		g.Duration.Duration = time.Second
	}
	if g.Work.Duration == 0 {
		g.Work.Duration = 2 * time.Millisecond
	}
	if g.Backoff.Duration == 0 {
		g.Backoff.Duration = time.Millisecond
	}
	if g.WorkDist == "" {
		g.WorkDist = "uniform"
	}
	if !contains(WorkDists, g.WorkDist) {
		return at("work_dist", "expected uniform, exponential or fixed, got %q", g.WorkDist)
	}
	if g.Fault == "" {
		return at("fault", "missing: name the fault (%s)", strings.Join(GeneratorFaults, ", "))
	}
	if !contains(GeneratorFaults, g.Fault) {
		return at("fault", "expected one of %s, got %q", strings.Join(GeneratorFaults, ", "), g.Fault)
	}
	if g.MaxCycles < 0 {
		return at("max_cycles", "expected 0 or more, got %d", g.MaxCycles)
	}
	if g.Faults < 0 || g.Faults > 100 {
		return at("faults", "expected 0 to 100, got %d", g.Faults)
	}
	if g.Trials < 0 {
		return at("trials", "expected 0 or more, got %d", g.Trials)
	}
	if g.Faults == 0 && g.Fault != "none" {
		g.Faults = 1
	}
	if g.Trials == 0 {
		g.Trials = 1
	}
	if gen := g.Generated(); gen != nil && gen.OnNode && s.Nodes == 0 && !s.compared {
		return at("fault", "%s needs a Redis node: this scenario's lock %s has none", g.Fault, s.Lock)
	}
	if gen := g.Generated(); gen != nil {
		if g.sizeOf != "" && g.sizeOf != g.Fault {
			return at(g.sizeField(), "sizes %s fault; this generator's fault is %s (its size is %s)", Indefinite(g.sizeOf), g.Fault, gen.Name)
		}
		if gen.Unit == nemesis.UnitRate && !(g.Size > 0) {
			return at(gen.Name, "expected a rate above 0, got %g", g.Size)
		}
		if g.Size < 0 {
			return at(gen.Name, "expected a positive duration, got %v", time.Duration(g.Size))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// postgresKinds lists the fault kinds a story may aim at its PostgreSQL
// server (nemesis.Kind.OnPostgres).
func postgresKinds() []string {
	var out []string
	for _, k := range nemesis.Kinds() {
		if k.OnPostgres {
			out = append(out, k.Name)
		}
	}
	return out
}

// RunsJobs says whether a step of the story runs a scheduled job (a
// write with a period): the job table the runner reads, and the first
// effect job_once changes.
func (s *Scenario) RunsJobs() bool {
	for _, st := range s.Steps {
		if st.Period != "" {
			return true
		}
	}
	return false
}
