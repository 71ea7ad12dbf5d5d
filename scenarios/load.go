package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/nemesis"
)

//go:embed *.yaml
var catalogue embed.FS

// Error is a bad scenario: it names the file, line and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// UnmarshalYAML parses "500ms", "10s", "-2s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &Error{Line: n.Line, Msg: "expected a duration like 500ms or 10s"}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("expected a duration like 500ms or 10s, got %q", n.Value)}
	}
	d.Duration = v
	return nil
}

// decodeStrict decodes a mapping node into the struct v field by field:
// an unknown field or a value of the wrong type is an Error with its line.
// It returns the line of each field present; the fields in skip it only
// records.
func decodeStrict(n *yaml.Node, v any, what string, renamed map[string]rename, skip ...string) (map[string]int, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &Error{Line: n.Line, Field: what, Msg: "expected a mapping of field: value"}
	}
	rv := reflect.ValueOf(v).Elem()
	fields := map[string][]int{}
	var known []string
	yamlFields(rv.Type(), nil, func(tag string, index []int) {
		fields[tag] = index
		known = append(known, tag)
	})
	known = append(known, skip...)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if _, dup := lines[k.Value]; dup {
			return nil, &Error{Line: k.Line, Field: what + k.Value, Msg: "field given twice"}
		}
		if slices.Contains(skip, k.Value) {
			lines[k.Value] = k.Line // the caller decodes it
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			if to, was := renamed[k.Value]; was {
				return nil, &Error{Line: k.Line, Field: what + k.Value, Msg: fmt.Sprintf("renamed %s: %s", to.name, to.why)}
			}
			name := k.Value
			if q := fmt.Sprintf("%q", name); name == "" || q[1:len(q)-1] != name {
				name = q // a key with a line break or a control character, or none
			}
			return nil, &Error{Line: k.Line, Field: what + name, Msg: unknownField(k.Value, "", known, "known: "+strings.Join(known, ", "))}
		}
		lines[k.Value] = k.Line
		if err := val.Decode(rv.FieldByIndex(idx).Addr().Interface()); err != nil {
			return nil, fieldError(err, val, what+k.Value)
		}
	}
	return lines, nil
}

// unknownField says that field name is none of known, the fields where it
// stands (of a fault kind's step, when of names one): the one it was
// plausibly meant to be (Closest), else the fields there are, as list says
// them.
func unknownField(name, of string, known []string, list string) string {
	msg := "unknown field"
	if of != "" {
		msg += " of " + of
	}
	if near := Closest(name, known); len(near) > 0 {
		return msg + "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return msg + " (" + list + ")"
}

// rename is a field's new name, and why it was renamed: decodeStrict
// names it for the old one.
type rename struct{ name, why string }

// stepRenames are a step's fields that were renamed so that each name
// means one thing in a scenario file.
var stepRenames = map[string]rename{
	"nodes": {"links", "a step's list of the client's links a fault acts on (the scenario's nodes is how many servers it starts)"},
	"fence": {"fencing_token", "the token a step's grant must carry (the scenario's fence is where tokens come from)"},
}

// yamlFields calls field with the yaml name and index path of every field
// of t, those of an embedded `yaml:",inline"` struct (Conditions) included.
func yamlFields(t reflect.Type, at []int, field func(tag string, index []int)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(append([]int(nil), at...), i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case f.Anonymous && name == "" && opts == "inline":
			yamlFields(f.Type, index, field)
		case name != "" && name != "-":
			field(name, index)
		}
	}
}

var (
	typeErr     = regexp.MustCompile("cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)")
	yamlLineErr = regexp.MustCompile(`^line (\d+): (.*)`)
	validName   = regexp.MustCompile(`^[a-z0-9][a-z0-9./-]*$`)
)

// fieldError turns a yaml decoding error into an Error for one field.
func fieldError(err error, val *yaml.Node, field string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		if c.Field == "" {
			c.Field = field
		} else {
			c.Field = field + itemIndex(val, c.Line) + "." + c.Field
		}
		if c.Line == 0 {
			c.Line = val.Line
		}
		return &c
	}
	msg := err.Error()
	if m := typeErr.FindStringSubmatch(msg); m != nil {
		want := m[3]
		switch {
		case strings.HasPrefix(want, "int"):
			want = "a whole number"
		case want == "string":
			want = "a string"
		case want == "time.Duration":
			want = "a duration like 500ms or 10s"
		case want == "bool":
			want = "true or false"
		case strings.HasPrefix(want, "[]"):
			want = "a list"
		}
		got := fmt.Sprintf("%q", m[2])
		switch m[1] { // yaml names no value for a mapping or a list
		case "map":
			got = "a mapping"
		case "seq":
			got = "a list"
		}
		msg = fmt.Sprintf("expected %s, got %s", want, got)
	} else {
		msg = strings.Join(strings.Fields(msg), " ") // one line
	}
	return &Error{Line: val.Line, Field: field, Msg: msg}
}

// itemIndex returns "[i]" for the item of a sequence node that holds line.
func itemIndex(seq *yaml.Node, line int) string {
	if seq.Kind != yaml.SequenceNode {
		return ""
	}
	idx := 0
	for i, item := range seq.Content {
		if item.Line <= line {
			idx = i
		}
	}
	return fmt.Sprintf("[%d]", idx)
}

// UnmarshalYAML decodes a step strictly. A fault step's own fields go
// into its kind's parameter struct (Step.Params); its counterfactual
// block is decoded as the whole changed step.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &Error{Line: n.Line, Msg: "expected a mapping of field: value"}
	}
	var cf *yaml.Node
	own, params := *n, *n
	own.Content, params.Content = nil, nil
	kind, fault := nemesis.LookupKind(mapValue(n, "do"))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		switch {
		case k == "counterfactual":
			cf = n.Content[i+1]
			own.Content = append(own.Content, n.Content[i:i+2]...) // for its line and duplicate check
		case fault && !faultStepFields[k]:
			params.Content = append(params.Content, n.Content[i:i+2]...)
		default:
			own.Content = append(own.Content, n.Content[i:i+2]...)
		}
	}
	type plain Step
	var p plain
	lines, err := decodeStrict(&own, &p, "", stepRenames, "counterfactual")
	if err != nil {
		return err
	}
	if fault {
		p.Params = kind.Params()
		plines, err := decodeStrict(&params, p.Params, "", stepRenames)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && strings.HasPrefix(e.Msg, "unknown field") {
				own, common := fieldNames(p.Params), sortedKeys(faultStepFields)
				e.Msg = unknownField(e.Field, kind.Name, append(own, common...),
					fmt.Sprintf("its fields: %s; and %s", strings.Join(own, ", "), strings.Join(common, ", ")))
			}
			return err
		}
		for k, l := range plines {
			lines[k] = l
		}
	}
	*s = Step(p)
	s.Line, s.lines = n.Line, lines
	if cf != nil {
		changed, err := changedStep(n, cf)
		if err != nil {
			return err
		}
		s.Counterfactual = changed
	}
	return nil
}

// faultStepFields are the fields of a fault step that are the story's,
// not the fault's.
var faultStepFields = map[string]bool{"do": true, "say": true, "cause": true, "counterfactual": true, "at": true}

// changedStep decodes the step of node n with the fields of its
// counterfactual block cf replacing its own, and without what the
// counterfactual run does not take (its cause mark and assertions). A
// block that gives another action (do) replaces the whole step but its
// narration.
func changedStep(n, cf *yaml.Node) (*Step, error) {
	if cf.Kind != yaml.MappingNode {
		return nil, &Error{Line: cf.Line, Field: "counterfactual", Msg: "expected a mapping of field: value"}
	}
	replaced := map[string]bool{}
	for i := 0; i+1 < len(cf.Content); i += 2 {
		replaced[cf.Content[i].Value] = true
	}
	merged := *n
	merged.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if replaced["do"] && k != "say" {
			continue // another action: none of this one's fields carry over
		}
		if !replaced[k] && !notInCounterfactual[k] {
			merged.Content = append(merged.Content, n.Content[i:i+2]...)
		}
	}
	merged.Content = append(merged.Content, cf.Content...)
	var st Step
	if err := st.UnmarshalYAML(&merged); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Field != "" {
			e.Field = "counterfactual." + e.Field
		}
		return nil, err
	}
	return &st, nil
}

// notInCounterfactual are a step's fields its changed step leaves out:
// the cause mark, the nested block and the assertions about the story as
// told.
var notInCounterfactual = map[string]bool{"counterfactual": true, "cause": true, "expect": true, "reason": true,
	"granted_by": true, "fencing_token": true, "read": true}

// mapValue is the scalar value of key in mapping n ("" if absent).
func mapValue(n *yaml.Node, key string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// fieldNames lists the yaml names of the fields of the struct v points to.
func fieldNames(v any) []string {
	var out []string
	yamlFields(reflect.TypeOf(v).Elem(), nil, func(tag string, _ []int) { out = append(out, tag) })
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// UnmarshalYAML decodes a generator block strictly. The size of its
// fault is given under the name of the parameter its kind draws (pause,
// jump, delay, drift): any of those names is a field, and the loader
// checks that it is the one its fault draws.
func (g *Generator) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &Error{Line: n.Line, Msg: "expected a mapping of field: value"}
	}
	own := *n
	own.Content = nil
	var size *yaml.Node
	var sizeKind nemesis.Kind
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if kind, drawn := nemesis.LookupDrawn(k.Value); drawn {
			if size != nil {
				return &Error{Line: k.Line, Field: k.Value, Msg: fmt.Sprintf("a generator draws one size; %s is given too", sizeKind.Generate.Name)}
			}
			size, sizeKind = v, kind
			continue
		}
		own.Content = append(own.Content, k, v)
	}
	type plain Generator
	var p plain
	lines, err := decodeStrict(&own, &p, "", nil)
	if err != nil {
		return err
	}
	*g = Generator(p)
	g.lines = lines
	if size == nil {
		return nil
	}
	drawn := sizeKind.Generate.Drawn
	g.lines[drawn.Name] = size.Line
	if drawn.Unit == nemesis.UnitRate {
		if err := size.Decode(&g.Size); err != nil {
			return fieldError(err, size, drawn.Name)
		}
	} else {
		var d Duration
		if err := size.Decode(&d); err != nil {
			return fieldError(err, size, drawn.Name)
		}
		g.Size = float64(d.Duration)
	}
	g.sizeOf = sizeKind.Name
	return nil
}

// Parse reads one scenario from YAML and validates it. file names it in
// errors.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
			fmt.Sscan(m[1], &line)
			msg = m[2]
		}
		return nil, &Error{File: file, Line: line, Msg: "not valid YAML: " + msg}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "empty file"}
	}
	type plain Scenario
	var p plain
	lines, err := decodeStrict(doc.Content[0], &p, "", nil, settingNames()...)
	if err == nil {
		sc := Scenario(p)
		sc.File, sc.lines, sc.settings = file, lines, settingsNode(doc.Content[0])
		var settled *Scenario
		if settled, err = settle(&sc); err == nil {
			return settled, nil
		}
	}
	var e *Error
	if errors.As(err, &e) {
		e.File = file
	}
	return nil, err
}

func (s *Scenario) applyDefaults() {
	if s.Clients == 0 {
		s.Clients = 2
	}
	if s.TTL.Duration == 0 {
		s.TTL.Duration = DefaultTTL
	}
	if s.NodeTimeout.Duration == 0 {
		s.NodeTimeout.Duration = DefaultNodeTimeout
	}
	if s.Key == "" {
		s.Key = "L"
	}
	if s.Margin.Duration == 0 {
		s.Margin.Duration = DefaultMargin
	}
	if s.Nodes == 0 {
		if spec, err := clients.Lookup(s.Lock); err == nil {
			s.Nodes = LockNodes(nil, spec)
		}
	}
}

// backend is the backend of the scenario's lock (nil if either is
// unknown).
func (s *Scenario) backend() backends.Backend {
	spec, err := clients.Lookup(s.Lock)
	if err != nil {
		return nil
	}
	return backends.Of(spec)
}

// ServerOptions are the scenario's settings for its servers, as a
// backend checks them and starts its servers with them.
func (c *Conditions) ServerOptions() backends.Options {
	return backends.Options{Nodes: c.Nodes, Clients: c.Clients, Fence: c.Fence, Settings: c.Settings}
}

// errAt builds an Error for a top-level field.
func (s *Scenario) errAt(field, format string, args ...any) error {
	return &Error{File: s.File, Line: s.lines[field], Field: field, Msg: fmt.Sprintf(format, args...)}
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
	if !contains(Verdicts, s.Expected) {
		return s.errAt("expected", "expected one of %s, got %q", strings.Join(Verdicts, ", "), s.Expected)
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
	if spec, _ := clients.Lookup(s.Lock); s.TTL.Duration < spec.MinTTL && !s.compared {
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
	// A counterfactual may give client_cmd: [] (the harness's own worker
	// plays it, as a hunt's baseline does).
	if _, given := s.lines["client_cmd"]; given && !(s.IsCounterfactual && len(s.ClientCmd) == 0) {
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
		line := st.lines[field]
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
		if _, given := st.lines[need]; !given {
			return at(need, "missing: %q needs %s", st.Do, need)
		}
	}
	aim := st.Aim()
	if _, given := st.lines["client"]; given && (aim.Client < 1 || aim.Client > s.Clients) {
		return at("client", "expected a client from 1 to %d, got %d", s.Clients, aim.Client)
	}
	isNode := func(n string) bool { return len(n) == 1 && n[0] >= 'A' && int(n[0]-'A') < s.Nodes }
	servers, _ := s.backend().Shape(s.Nodes, s.TTL.Duration) // "3 etcd member(s)"
	if aim.Node != "" && !isNode(aim.Node) {
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
	if k, ok := nemesis.LookupKind(st.Do); ok && k.Check != nil {
		if err := k.Check(st.Params, nemesis.Facts{NodeClockless: s.backend().NodeClockless(), Nodes: s.Nodes, Clients: s.Clients, Replicas: backends.Replicated(s.Settings), Persistent: backends.Persistent(s.Settings)}); err != nil {
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
		line := g.lines[field]
		if line == 0 {
			line = s.lines["generator"]
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

// Catalogue loads every built-in scenario, sorted by name. A duplicate name
// is an error.
func Catalogue() ([]*Scenario, error) {
	entries, err := catalogue.ReadDir(".")
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var out []*Scenario
	for _, e := range entries {
		data, err := catalogue.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		sc, err := Parse("scenarios/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[sc.Name]; dup {
			return nil, &Error{File: sc.File, Line: sc.lines["name"], Field: "name", Msg: fmt.Sprintf("%q is also the name in %s", sc.Name, prev)}
		}
		seen[sc.Name] = sc.File
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Text is the YAML of the built-in scenario in file (its File,
// "scenarios/NAME.yaml"), as written.
func Text(file string) ([]byte, error) {
	return catalogue.ReadFile(strings.TrimPrefix(file, "scenarios/"))
}

// NotFoundError says no scenario has that name; Close lists near names.
type NotFoundError struct {
	Name  string
	Close []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no scenario named %q", e.Name)
	if len(e.Close) > 0 {
		msg += "; did you mean: " + strings.Join(e.Close, ", ")
	}
	return msg + " (sim list shows them all)"
}

// Find returns the built-in scenario called name, or loads a file when
// name is a path (it contains a '/' or ends in .yaml or .yml).
func Find(name string) (*Scenario, error) {
	if strings.Contains(name, "/") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, &Error{File: name, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
		}
		return Parse(filepath.Clean(name), data)
	}
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sc := range all {
		if sc.Name == name {
			return sc, nil
		}
		names = append(names, sc.Name)
	}
	return nil, &NotFoundError{Name: name, Close: closeNames(name, names)}
}

// Match returns the built-in scenarios whose name matches the regex.
func Match(pattern string) ([]*Scenario, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad pattern %q: %v", pattern, err)
	}
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, sc := range all {
		if re.MatchString(sc.Name) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// closeNames returns up to five names within a small edit distance of
// name, or that contain it, closest first.
func closeNames(name string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		d := EditDistance(name, n)
		if strings.Contains(n, name) && len(name) >= 3 {
			d = min(d, 2)
		}
		if d <= max(3, len(name)/3) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 5; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// EditDistance is the Levenshtein distance between a and b (for "did you
// mean" suggestions).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
