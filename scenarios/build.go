// build.go is a scenario built in Go, as `sim hunt` builds its stories,
// and the one marshaller that writes any scenario as its file: Build
// validates a Scenario value as Parse validates a file, and Marshal
// writes the fields a scenario gives, so that Parse(Marshal(s)) is s.

package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/nemesis"
)

// Build validates a scenario built in Go, as Parse validates one read
// from a file, and fills in its defaults. The fields it gives are those
// set (not zero); a fault step's own fields are its Params (a pointer to
// its kind's parameter struct); a step's Counterfactual is the whole
// changed step; a counterfactual block gives the fields set and those it
// Gives. file names it in errors.
func Build(file string, sc Scenario) (*Scenario, error) {
	s := sc
	s.File = file
	if s.givenAt == nil {
		s.givenAt = given(&s)
	}
	s.Steps = slices.Clone(s.Steps)
	for i := range s.Steps {
		s.Steps[i].built()
	}
	if s.Counterfactual != nil {
		c := *s.Counterfactual
		c.givenAt = merged(given(&c), c.givenAt)
		s.Counterfactual = &c
	}
	if s.Generator != nil {
		g := *s.Generator
		if g.givenAt == nil {
			g.givenAt = given(&g)
			if g.Size != 0 {
				g.sizeOf = g.Fault
				g.givenAt[g.sizeField()] = 0
			}
		}
		s.Generator = &g
	}
	return settle(&s)
}

// settle makes a story read (Parse) or built (Build) one a run can play:
// its defaults, its servers' settings (those it gives, over its backend's
// defaults or over the ones set in Go) and Resolve's one validation and
// counterfactual.
func settle(s *Scenario) (*Scenario, error) {
	s.applyDefaults()
	set, err := s.decodeSettings(s.settings, s.Settings, "")
	if err != nil {
		return nil, err
	}
	s.Settings = set
	v, err := Resolve(s, Changes{})
	if err != nil {
		return nil, err
	}
	return v.Scenario, nil
}

// Gives marks fields of a counterfactual block built in Go as given
// though they are zero (watchdog: "" takes the story's watchdog away,
// client_cmd: [] has the harness's own worker play).
func (c *Counterfactual) Gives(fields ...string) {
	if c.givenAt == nil {
		c.givenAt = map[string]int{}
	}
	for _, f := range fields {
		c.givenAt[f] = 0
	}
}

// built gives a step built in Go the fields it sets, and its changed
// step those it sets.
func (st *Step) built() {
	if st.givenAt == nil {
		st.givenAt = given(st)
		if st.Params != nil {
			st.givenAt = merged(st.givenAt, given(st.Params))
		}
	}
	if st.Counterfactual != nil {
		cf := *st.Counterfactual
		cf.built()
		st.Counterfactual = &cf
	}
}

// given lists the yaml names of the fields of the struct v points to
// that are set (not zero), as the fields a value built in Go gives
// (givenAt), each at line 0: no file.
func given(v any) map[string]int {
	out := map[string]int{}
	rv := reflect.ValueOf(v).Elem()
	yamlFields(rv.Type(), nil, func(tag string, index []int) {
		if !rv.FieldByIndex(index).IsZero() {
			out[tag] = 0
		}
	})
	return out
}

// merged is a with b's fields added.
func merged(a, b map[string]int) map[string]int {
	for k, l := range b {
		a[k] = l
	}
	return a
}

// Marshal writes the scenario as its file: the fields it gives (as its
// file gave them, or as Build found them set), its steps (a fault step's
// own fields from its Params; a changed step as the fields it changes)
// and its counterfactual and generator blocks. Parse reads it back as the
// same scenario.
func Marshal(s *Scenario) ([]byte, error) { return marshal(s, false) }

// MarshalResolved writes the scenario as Marshal does, and also every
// field that Resolve set without its file giving it (another lock's
// settings, a counterfactual's changes, a flag's value): the run
// directory's scenario.yaml, which Parse reads back as the story the run
// played.
func MarshalResolved(s *Scenario) ([]byte, error) { return marshal(s, true) }

// marshal is Marshal, and with set MarshalResolved.
func marshal(s *Scenario, set bool) ([]byte, error) {
	root := mapping()
	if err := addFields(root, s, keeper(s.givenAt, set), "steps", "counterfactual", "generator"); err != nil {
		return nil, err
	}
	if s.Settings != nil {
		// The servers' settings (yaml:"-": the lock's backend decodes
		// them): those the file gave, or those set.
		given := map[string]int{}
		if s.settings != nil {
			for _, name := range givenNames(s.settings) {
				given[name] = 0
			}
		}
		sv := reflect.New(reflect.TypeOf(s.Settings))
		sv.Elem().Set(reflect.ValueOf(s.Settings))
		if err := addFields(root, sv.Interface(), keeper(given, set || s.settings == nil)); err != nil {
			return nil, err
		}
	}
	if len(s.Steps) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range s.Steps {
			n, err := stepNode(&s.Steps[i], set)
			if err != nil {
				return nil, err
			}
			seq.Content = append(seq.Content, n)
		}
		root.Content = append(root.Content, key("steps"), seq)
	}
	if c := s.Counterfactual; c != nil {
		n := mapping()
		if err := addFields(n, c, keeper(c.givenAt, false)); err != nil {
			return nil, err
		}
		if c.settings != nil {
			n.Content = append(n.Content, c.settings.Content...) // the settings it changes, as given
		}
		root.Content = append(root.Content, key("counterfactual"), n)
	}
	if g := s.Generator; g != nil {
		n := mapping()
		if err := addFields(n, g, keeper(g.givenAt, false)); err != nil {
			return nil, err
		}
		if k, ok := nemesis.LookupKind(g.sizeOf); ok && k.Generate != nil {
			var size any = g.Size
			if k.Generate.Unit == nemesis.UnitDuration {
				size = Duration{Duration: time.Duration(g.Size)}
			}
			if err := add(n, k.Generate.Name, size); err != nil {
				return nil, err
			}
		}
		root.Content = append(root.Content, key("generator"), n)
	}
	var b strings.Builder
	b.WriteString("# yaml-language-server: $schema=schema.json\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// field is one field of a step: its yaml name and value.
type field struct {
	name  string
	value any
}

// stepFields lists step st's fields, those keep keeps: do, then a fault's
// own (its Params) or a story step's, then at and cause, then say.
func stepFields(st *Step, keep func(name string, v reflect.Value) bool) []field {
	var own, params []field
	rv := reflect.ValueOf(st).Elem()
	yamlFields(rv.Type(), nil, func(tag string, index []int) {
		if f := rv.FieldByIndex(index); tag != "counterfactual" && keep(tag, f) {
			own = append(own, field{tag, f.Interface()})
		}
	})
	if st.Params != nil {
		pv := reflect.ValueOf(st.Params).Elem()
		yamlFields(pv.Type(), nil, func(tag string, index []int) {
			if f := pv.FieldByIndex(index); keep(tag, f) {
				params = append(params, field{tag, f.Interface()})
			}
		})
		// A fault step's own fields are its kind's; of the story step's,
		// it takes only the story's (do, say, at, cause).
		own = slices.DeleteFunc(own, func(f field) bool { return !faultStepFields[f.name] })
	}
	out := slices.DeleteFunc(slices.Clone(own), func(f field) bool { return f.name != "do" })
	out = append(out, params...)
	for _, f := range own {
		if f.name != "do" && f.name != "say" {
			out = append(out, f)
		}
	}
	return append(out, slices.DeleteFunc(own, func(f field) bool { return f.name != "say" })...)
}

// stepNode writes step st: the fields it gives (with set, also those set
// otherwise), and its changed step as the fields that change.
func stepNode(st *Step, set bool) (*yaml.Node, error) {
	n := mapping()
	for _, f := range stepFields(st, keeper(st.givenAt, set)) {
		if err := add(n, f.name, f.value); err != nil {
			return nil, err
		}
	}
	if cf := st.Counterfactual; cf != nil {
		c := mapping()
		if err := changes(c, st, cf); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, key("counterfactual"), c)
	}
	return n, nil
}

// changes writes the fields of changed step cf that are not step st's
// own, as the loader merges them back (changedStep): all of them but an
// unchanged narration when it is another action.
func changes(n *yaml.Node, st, cf *Step) error {
	gives := func(name string, _ reflect.Value) bool { _, ok := cf.givenAt[name]; return ok }
	if cf.Do != st.Do {
		for _, f := range stepFields(cf, gives) {
			if f.name != "say" || cf.Say != st.Say {
				if err := add(n, f.name, f.value); err != nil {
					return err
				}
			}
		}
		return nil
	}
	was := map[string]string{}
	for _, f := range stepFields(st, func(name string, _ reflect.Value) bool {
		_, ok := st.givenAt[name]
		return ok && !notInCounterfactual[name]
	}) {
		was[f.name] = text(f.value)
	}
	for _, f := range stepFields(cf, func(name string, v reflect.Value) bool { _, had := was[name]; return gives(name, v) || had }) {
		if v, had := was[f.name]; !had || v != text(f.value) {
			if err := add(n, f.name, f.value); err != nil {
				return err
			}
		}
	}
	return nil
}

// keeper says which fields are written: those given, and with set also
// those whose value is not the zero value.
func keeper(given map[string]int, set bool) func(name string, v reflect.Value) bool {
	return func(name string, v reflect.Value) bool {
		_, ok := given[name]
		return ok || set && !v.IsZero()
	}
}

// addFields adds the fields of the struct v points to that keep keeps,
// in the struct's order, but those in skip.
func addFields(n *yaml.Node, v any, keep func(name string, v reflect.Value) bool, skip ...string) error {
	rv := reflect.ValueOf(v).Elem()
	var err error
	yamlFields(rv.Type(), nil, func(tag string, index []int) {
		if f := rv.FieldByIndex(index); err == nil && keep(tag, f) && !slices.Contains(skip, tag) {
			err = add(n, tag, f.Interface())
		}
	})
	return err
}

// add adds name: value to mapping n.
func add(n *yaml.Node, name string, value any) error {
	var v yaml.Node
	if r := reflect.ValueOf(value); (r.Kind() == reflect.Slice || r.Kind() == reflect.Map) && r.IsNil() {
		// A list or map given but cleared (a counterfactual's granted_by,
		// or fixed_in) is null, which reads back as none; [] would read
		// back empty.
		n.Content = append(n.Content, key(name), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
		return nil
	}
	if err := v.Encode(value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	n.Content = append(n.Content, key(name), &v)
	return nil
}

// text is a value as YAML writes it, to compare two.
func text(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func key(name string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: name} }

// Same says whether s and o are the same story, wherever each was loaded
// or built from (their files, and where and whether each field was
// given, aside).
func (s *Scenario) Same(o *Scenario) bool { return reflect.DeepEqual(s.bare(), o.bare()) }

// bare is a copy of s without where its fields came from (its file and
// givenAt) or what Resolve builds from them (its counterfactual story).
func (s *Scenario) bare() Scenario {
	b := *s
	b.File, b.givenAt, b.cf, b.resolved, b.settings, b.own = "", nil, nil, false, nil, ""
	b.Steps = slices.Clone(s.Steps)
	for i := range b.Steps {
		b.Steps[i] = b.Steps[i].bare()
	}
	if c := s.Counterfactual; c != nil {
		cc := *c
		cc.givenAt, cc.settings = nil, nil
		b.Counterfactual = &cc
	}
	if g := s.Generator; g != nil {
		gg := *g
		gg.givenAt, gg.sizeOf = nil, ""
		b.Generator = &gg
	}
	return b
}

// bare is a copy of st without where its fields came from (its line and
// givenAt), or its numbers in the story.
func (st Step) bare() Step {
	st.Line, st.givenAt, st.told, st.changed = 0, nil, 0, false
	if st.Counterfactual != nil {
		cf := st.Counterfactual.bare()
		st.Counterfactual = &cf
	}
	return st
}

// MarshalYAML writes a duration as Go writes one ("1.5s").
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
