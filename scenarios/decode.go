// decode.go decodes a scenario's YAML strictly: an unknown field or a
// value of the wrong type is an Error naming its line and field.

package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/nemesis"
)

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
// It returns the fields given, each with its line (a givenAt); the fields
// in skip it only records.
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
	givenAt := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if _, dup := givenAt[k.Value]; dup {
			return nil, &Error{Line: k.Line, Field: what + k.Value, Msg: "field given twice"}
		}
		if slices.Contains(skip, k.Value) {
			givenAt[k.Value] = k.Line // the caller decodes it
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
		givenAt[k.Value] = k.Line
		if err := val.Decode(rv.FieldByIndex(idx).Addr().Interface()); err != nil {
			return nil, fieldError(err, val, what+k.Value)
		}
	}
	return givenAt, nil
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
	givenAt, err := decodeStrict(&own, &p, "", stepRenames, "counterfactual")
	if err != nil {
		return err
	}
	if fault {
		p.Params = kind.Params()
		paramsAt, err := decodeStrict(&params, p.Params, "", stepRenames)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && strings.HasPrefix(e.Msg, "unknown field") {
				own, common := fieldNames(p.Params), sortedKeys(faultStepFields)
				e.Msg = unknownField(e.Field, kind.Name, append(own, common...),
					fmt.Sprintf("its fields: %s; and %s", strings.Join(own, ", "), strings.Join(common, ", ")))
			}
			return err
		}
		for k, l := range paramsAt {
			givenAt[k] = l
		}
	}
	*s = Step(p)
	s.Line, s.givenAt = n.Line, givenAt
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
	givenAt, err := decodeStrict(&own, &p, "", nil)
	if err != nil {
		return err
	}
	*g = Generator(p)
	g.givenAt = givenAt
	if size == nil {
		return nil
	}
	drawn := sizeKind.Generate.Drawn
	g.givenAt[drawn.Name] = size.Line
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
