package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

// Counterfactual is a scenario's cause, named so that it can be taken
// away: the steps marked cause are left out, the steps with a
// counterfactual block are changed, and the fields given here replace the
// scenario's (any of its Conditions: a lock, a storage mode, a watchdog,
// a timeout...). The verdict must then flip to Expected.
type Counterfactual struct {
	// Change says in words what the counterfactual changes, for the
	// sentence "without the clock jump on C: safe".
	Change string `yaml:"change"`
	// Expected is the verdict the changed story must end in. Default: the
	// opposite of the scenario's (safe for unsafe, leaked and hung, unsafe for
	// safe).
	Expected checker.Verdict `yaml:"expected"`

	// Conditions are any of the scenario's conditions (lock, storage,
	// fence, watchdog, ttl, nodes, persistence, a PostgreSQL timeout...):
	// each one given replaces the scenario's.
	Conditions `yaml:",inline"`
	// GeneratorFault replaces generator.fault (none: no fault at all).
	GeneratorFault *string `yaml:"generator_fault"`
	// FixedIn is the counterfactual's own fixed_in: where its lock's
	// servers have the bug it shows fixed (etcd: "3.5"), so that it is
	// expected to end safe there and is not played as a flip. Changes
	// nothing of the story.
	FixedIn map[string]string `yaml:"fixed_in"`

	// givenAt is the set of fields the block gives, by yaml name, and so
	// replaces (Given): each with its line in the file, 0 when built in Go
	// or marked given though zero (Gives); see Scenario.givenAt.
	givenAt map[string]int
	// settings are the settings of the lock's servers the block gives
	// (nil: none), as Scenario.settings.
	settings *yaml.Node
}

// UnmarshalYAML decodes a counterfactual block strictly.
func (c *Counterfactual) UnmarshalYAML(n *yaml.Node) error {
	type plain Counterfactual
	var p plain
	givenAt, err := decodeStrict(n, &p, "", nil, settingNames()...)
	if err != nil {
		return err
	}
	*c = Counterfactual(p)
	c.givenAt, c.settings = givenAt, settingsNode(n)
	return nil
}

// The words a step's expect says its operation ended in: one of them
// for an operation that completed (Ended), refused for one that failed,
// unknown for one whose outcome nobody can tell.
const (
	Granted  = "granted"  // an acquire that completed
	Accepted = "accepted" // a write that completed
	OK       = "ok"       // a release, an extend or a renewal that completed
	Refused  = "refused"
	Unknown  = "unknown"
)

// Expectations a step can state, by action.
var expectations = map[string][]string{
	"acquire": {Granted, Refused, Unknown},
	"write":   {Accepted, Refused, Unknown},
	"release": {OK, Refused, Unknown},
	"extend":  {OK, Refused, Unknown},
	"renewal": {OK, Refused},
}

// Ended is the expect word for an operation op (history's: acquire,
// write, release, extend) that ended as t: the word a step claiming that
// end would say, and what a contradiction reports.
func Ended(op string, t history.Type) string {
	switch {
	case t == history.Fail:
		return Refused
	case t != history.Ok:
		return Unknown
	case op == history.OpAcquire:
		return Granted
	case op == history.OpWrite:
		return Accepted
	}
	return OK
}

// Reasons lists the refusal reasons a step can assert (history's).
var Reasons = history.Reasons

// validateStory checks step i's assertions and counterfactual fields.
func (s *Scenario) validateStory(i int, at func(field, format string, args ...any) error) error {
	st := s.Steps[i]
	if st.Expect != "" || st.Reason != "" || len(st.GrantedBy) > 0 || st.Fence != 0 || st.Read != nil {
		want, ok := expectations[st.Do]
		if !ok {
			return at("expect", "%q has nothing to assert: expect goes on acquire, write, release, extend or renewal", st.Do)
		}
		if st.Expect == "" {
			return at("expect", "missing: reason and granted_by go with expect (%s)", strings.Join(want, ", "))
		}
		if !contains(want, st.Expect) {
			return at("expect", "expected one of %s for %q, got %q", strings.Join(want, ", "), st.Do, st.Expect)
		}
		if st.Reason != "" && (st.Expect != Refused || !contains(Reasons, st.Reason)) {
			return at("reason", "expected a refusal reason (%s) with expect: refused, got %q", strings.Join(Reasons, ", "), st.Reason)
		}
		if len(st.GrantedBy) > 0 && st.Do != "acquire" {
			return at("granted_by", "only an acquire is granted by nodes")
		}
		if st.Read != nil && (st.Do != "write" || st.Expect == Unknown) {
			return at("read", "a value read goes with a write that is accepted or refused")
		}
		if st.Fence != 0 && (st.Expect != Granted || (s.Fence == "" && !lockFences(s.Lock))) {
			return at("fencing_token", "a fencing token goes with expect: granted, in a scenario with a fence source or a lock whose leases carry one (etcd)")
		}
		for _, n := range st.GrantedBy {
			if len(n) != 1 || n[0] < 'A' || int(n[0]-'A') >= s.Nodes {
				return at("granted_by", "unknown node %q: this scenario has %d Redis node(s)", n, s.Nodes)
			}
		}
	}
	if st.Wait.Duration != 0 && (st.Do != "acquire" || st.Wait.Duration < 0) {
		return at("wait", "a positive wait goes on an acquire only")
	}
	if st.Wait.Duration > 0 && len(s.ClientCmd) == 0 && !lockWaits(s.Lock) {
		return at("wait", "lock %s tries once: it cannot wait for the lock (a lock that can says so in `sim locks`)", s.Lock)
	}
	if st.Unlocked && st.Do != "write" {
		return at("unlocked", "only a write can be unlocked")
	}
	if st.Period != "" && (st.Do != "write" || s.Storage == "") {
		return at("period", "a period goes on a write, in a story with storage (its job table)")
	}
	if st.Period != "" && len(s.ClientCmd) > 0 {
		return at("period", "only the harness's own worker writes a job's row; a client program (client_cmd) cannot yet")
	}
	if st.At != "" {
		if err := s.validateAnchor(i, at); err != nil {
			return err
		}
	}
	if st.Counterfactual != nil && st.Cause {
		return at("counterfactual", "a cause step is left out of the counterfactual: drop cause or counterfactual")
	}
	if (st.Cause || st.Counterfactual != nil) && s.Counterfactual == nil {
		return at("cause", "the scenario has no counterfactual block to say what it changes")
	}
	return nil
}

// AtLeaseChecked anchors a pause on the moment a client's lease check
// before a write has passed, before the write goes out (Step.At).
const AtLeaseChecked = "lease-checked"

// Anchors lists the values of Step.At.
var Anchors = []string{AtLeaseChecked}

// validateAnchor checks a step anchored on an event inside a client
// (Step.At): a pause of a client, in a story whose clients check their
// lease before writing and are the harness's own worker, after an async
// write of that client that is still in flight.
func (s *Scenario) validateAnchor(i int, at func(field, format string, args ...any) error) error {
	st := s.Steps[i]
	c := st.Aim().Client
	switch {
	case !contains(Anchors, st.At):
		return at("at", "expected one of %s, got %q", strings.Join(Anchors, ", "), st.At)
	case st.Do != "pause" || c == 0:
		return at("at", "only a pause of a client is anchored on an event inside it")
	case !s.CheckLease:
		return at("at", "%s needs check_lease: true (the client checks its lease before each write)", st.At)
	case len(s.ClientCmd) > 0:
		return at("at", "only the harness's own worker stops itself at %s; a client program (client_cmd) cannot yet", st.At)
	}
	for j := i - 1; j >= 0; j-- {
		p := s.Steps[j]
		if p.Aim().Client != c {
			continue
		}
		switch {
		case p.Do == "write" && p.Async:
			return nil
		case p.Do == "write", p.Do == "wait", p.Do == "acquire", p.Do == "release", p.Do == "extend", p.Do == "kill":
			return at("at", "the pause strikes in client %d's write in flight: the client's latest step before it must be an async write, and step %d (%s) is not", c, j+1, describeOp(p))
		}
	}
	return at("at", "no write of client %d comes before it: the pause strikes in the client's latest write, sent async", c)
}

// describeOp names a client step for an error: its action, and for a
// write that is not async, so.
func describeOp(st Step) string {
	if st.Do == "write" {
		return "a write that is not async"
	}
	return st.Do
}

// AnchoredPause says whether step i, a write of client c, has a pause
// anchored in it: a later step pauses c at AtLeaseChecked before c's next
// write. The runner then asks the client to stop itself there.
func (s *Scenario) AnchoredPause(i, c int) bool {
	for _, st := range s.Steps[i+1:] {
		if st.Do == "write" && st.Client == c {
			return false
		}
		if st.At == AtLeaseChecked && st.Aim().Client == c {
			return true
		}
	}
	return false
}

// lockFences says whether the named lock's own leases carry a fencing
// token (clients.Spec.Fences).
func lockFences(lock string) bool {
	spec, err := clients.Lookup(lock)
	return err == nil && spec.Fences
}

// lockWaits says whether the named lock's acquire can wait for a held
// lock (clients.Spec.Waits).
func lockWaits(lock string) bool {
	spec, err := clients.Lookup(lock)
	return err == nil && spec.Waits
}

// Opposite is the verdict a counterfactual flips to by default.
func Opposite(verdict checker.Verdict) checker.Verdict {
	if verdict == checker.Safe {
		return checker.Unsafe
	}
	return checker.Safe
}

// CounterfactualScenario is the counterfactual story (Resolve builds it
// with the story): a copy of s without its cause steps, with its changed
// steps and fields, expecting the flipped verdict.
func (s *Scenario) CounterfactualScenario() (*Scenario, error) {
	switch {
	case s.Counterfactual == nil:
		return nil, s.errAt("counterfactual", "missing: this scenario names no cause to take away")
	case s.cf == nil:
		return nil, fmt.Errorf("%s: the counterfactual is built when the story is resolved (scenarios.Resolve)", s.Name)
	}
	return s.cf, nil
}

// buildCounterfactual builds and validates the counterfactual story. Its
// steps' assertions are dropped: the changed story is not expected to
// happen as the original one is told.
func (s *Scenario) buildCounterfactual() (*Scenario, error) {
	c := s.Counterfactual
	cf := *s
	cf.Counterfactual, cf.cf = nil, nil
	cf.FixedIn = c.FixedIn // the story's is not its: without the cause there is no bug to fix
	cf.IsCounterfactual = true
	cf.Expected = c.Expected
	if c.GeneratorFault != nil && s.Generator == nil {
		return nil, s.errAt("counterfactual", "generator_fault needs a generator scenario")
	}
	for _, o := range c.overrides(s) {
		o.apply(&cf)
	}
	var err error
	if cf.Settings, err = c.counterfactualSettings(s, &cf); err != nil {
		return nil, err
	}
	// A story whose node count came from its own lock's registration
	// would run the counterfactual's lock on the wrong number of nodes; a
	// story that sets nodes itself runs both locks on that many.
	if _, explicit := s.givenAt["nodes"]; c.Given("lock") && !c.Given("nodes") && s.Nodes > 0 && !explicit {
		if spec, err := clients.Lookup(cf.Lock); err == nil && LockNodes(s, spec) > s.Nodes {
			return nil, s.errAt("counterfactual", "lock %s wants %d nodes, the story has %d: a counterfactual changes one thing", cf.Lock, LockNodes(s, spec), s.Nodes)
		}
	}
	cf.Steps = nil
	for i, st := range s.Steps {
		if st.Cause {
			continue
		}
		changed := st.Counterfactual != nil
		if changed {
			st = *st.Counterfactual // the changed step, without assertions (changedStep)
		}
		st.Expect, st.Reason, st.GrantedBy, st.Fence, st.Read = "", "", nil, 0, nil
		st.told, st.changed = s.StepNumber(i), changed
		cf.Steps = append(cf.Steps, st)
	}
	if err := cf.validate(); err != nil {
		return nil, fmt.Errorf("the counterfactual of %s: %w", s.Name, err)
	}
	cf.resolved = true
	return &cf, nil
}

// validateCounterfactual fills in the default and checks that the
// counterfactual changes something.
func (s *Scenario) validateCounterfactual() error {
	c := s.Counterfactual
	if c == nil {
		return nil
	}
	at := func(field, format string, args ...any) error {
		line := c.givenAt[field]
		if line == 0 {
			line = s.givenAt["counterfactual"]
		}
		return &Error{File: s.File, Line: line, Field: "counterfactual." + field, Msg: fmt.Sprintf(format, args...)}
	}
	if c.Change == "" {
		return at("change", "missing: say in words what the counterfactual changes (\"without the clock jump on C\")")
	}
	if c.Expected == "" {
		c.Expected = Opposite(s.Expected)
	}
	if !slices.Contains(Verdicts, c.Expected) {
		return at("expected", "expected one of %s, got %q", strings.Join(verdictNames(), ", "), c.Expected)
	}
	if c.Expected == s.Expected {
		return at("expected", "the counterfactual must flip the verdict: both say %s", c.Expected)
	}
	fields := c.overrides(s)
	changed := len(fields) > 0
	for i, st := range s.Steps {
		changed = changed || st.Cause || st.Counterfactual != nil
		// A counterfactual changes one thing: a field set, or the cause
		// steps left out, not both (the other would change the verdict
		// too, and the run could not say which did).
		if st.Cause && len(fields) > 0 {
			line := st.givenAt["cause"]
			if line == 0 {
				line = st.Line
			}
			return &Error{File: s.File, Line: line, Field: fmt.Sprintf("steps[%d].cause", i),
				Msg: fmt.Sprintf("the counterfactual sets %s already, and a counterfactual changes one thing: drop cause, or the counterfactual's %s", fields[0].name, fields[0].name)}
		}
	}
	if !changed {
		return at("change", "the counterfactual changes nothing: mark the cause steps with cause: true, or give the field to change")
	}
	cf, err := s.buildCounterfactual()
	s.cf = cf
	return err
}

// CounterfactualChanges lists what the counterfactual removes or changes,
// one entry per step or field.
func (s *Scenario) CounterfactualChanges() []string {
	c := s.Counterfactual
	if c == nil {
		return nil
	}
	var out []string
	for _, o := range c.overrides(s) {
		out = append(out, fmt.Sprintf("%s: %s -> %s", o.name, orNone(o.from), orNone(o.to)))
	}
	for i, st := range s.Steps {
		switch {
		case st.Cause:
			out = append(out, fmt.Sprintf("step %d removed (%s)", i+1, st.Describe()))
		case st.Counterfactual != nil:
			out = append(out, fmt.Sprintf("step %d changed (%s -> %s)", i+1, st.Describe(), st.Counterfactual.Describe()))
		}
	}
	return out
}

// override is one scenario field a counterfactual replaces: its name,
// its value in the story and in the counterfactual, and how to set it.
type override struct {
	name, from, to string
	apply          func(cf *Scenario)
}

// overrides lists the fields c replaces in s, in one place for building
// the counterfactual, checking that it changes something, and saying what
// it changed.
func (c *Counterfactual) overrides(s *Scenario) []override {
	var out []override
	from, to := reflect.ValueOf(&s.Conditions).Elem(), reflect.ValueOf(c.Conditions)
	yamlFields(to.Type(), nil, func(tag string, index []int) {
		if _, given := c.givenAt[tag]; !given {
			return
		}
		v := to.FieldByIndex(index)
		out = append(out, override{tag, fmt.Sprint(from.FieldByIndex(index).Interface()), fmt.Sprint(v.Interface()), func(cf *Scenario) {
			reflect.ValueOf(&cf.Conditions).Elem().FieldByIndex(index).Set(v)
		}})
	})
	out = append(out, c.settingOverrides(s)...)
	if v := c.GeneratorFault; v != nil {
		from := ""
		if s.Generator != nil {
			from = s.Generator.Fault
		}
		// CounterfactualScenario refuses it on a scripted story.
		out = append(out, override{"generator.fault", from, *v, func(cf *Scenario) {
			g := *cf.Generator
			g.Fault = *v
			if g.Fault == "none" {
				g.Faults, g.Size, g.sizeOf = 0, 0, "" // nothing to size
			}
			cf.Generator = &g
		}})
	}
	return out
}

// CounterfactualLock is the lock the story's counterfactual plays when
// changing the lock is all it does, "" otherwise: zookeeper for
// zookeeper-lock-delay, whose counterfactual takes the lock-delay away.
// That lock, played on the story, is its counterfactual (sim matrix).
func (s *Scenario) CounterfactualLock() string {
	c := s.Counterfactual
	if c == nil || c.GeneratorFault != nil {
		return ""
	}
	for _, st := range s.Steps {
		if st.Cause {
			return "" // its counterfactual also leaves the cause's steps out
		}
	}
	if o := c.overrides(s); len(o) != 1 || o[0].name != "lock" {
		return ""
	}
	return c.Lock
}

// Given says whether the counterfactual block gives the field (its yaml
// name) and so replaces the scenario's.
func (c *Counterfactual) Given(field string) bool {
	_, ok := c.givenAt[field]
	return ok
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// StepNumber is the number the story shows step i with: its place, or in
// a counterfactual story (whose cause steps are left out), its place in
// the story it comes from.
func (s *Scenario) StepNumber(i int) int {
	if n := s.Steps[i].told; n > 0 {
		return n
	}
	return i + 1
}

// Narrate is the line the narration tells step i of a counterfactual
// story with: the story's words (the step's say, else what it does)
// under the number the story shows it with, and for a step the
// counterfactual changed, what it does instead.
func (s *Scenario) Narrate(i int) string {
	st := s.Steps[i]
	line := fmt.Sprintf("step %d", s.StepNumber(i))
	switch {
	case st.changed && st.Say != "":
		return fmt.Sprintf("%s, changed to %s (the story: %q)", line, st.Describe(), st.Say)
	case st.changed:
		return line + ", changed to " + st.Describe()
	case st.Say != "":
		return line + ": " + st.Say
	}
	return line + ": " + st.Describe()
}
