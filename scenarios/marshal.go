package scenarios

// marshal.go: a scenario written back as a scenario file, which Parse
// reads as the same scenario: the run directory keeps the story it played
// (scenario.yaml), resolved (Resolve: its defaults, a --lock, a
// counterfactual...), so that it can be checked again offline or played
// again as it was.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/nemesis"
)

// Marshal writes sc as a scenario file: every field it sets (the
// defaults it was given included), a fault step's parameters among the
// step's fields, a changed step whole in its counterfactual block, and of
// the counterfactual block the fields its file gave. Parse reads the
// text back as sc.
func Marshal(sc *Scenario) ([]byte, error) {
	n, err := scenarioNode(sc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// MarshalYAML writes a duration as Go does ("1.5s").
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// scenarioNode is sc as a mapping node.
func scenarioNode(sc *Scenario) (*yaml.Node, error) {
	n := mapNode()
	err := addFields(n, reflect.ValueOf(sc).Elem(), func(tag string, v reflect.Value) (bool, error) {
		switch tag {
		case "steps":
			seq := &yaml.Node{Kind: yaml.SequenceNode}
			for _, st := range sc.Steps {
				sn, err := stepNode(st, false)
				if err != nil {
					return true, err
				}
				seq.Content = append(seq.Content, sn)
			}
			addPair(n, tag, seq)
			return true, nil
		case "counterfactual":
			addPair(n, tag, counterfactualNode(sc.Counterfactual))
			return true, nil
		case "generator":
			addPair(n, tag, generatorNode(sc.Generator))
			return true, nil
		}
		return false, nil
	})
	return n, err
}

// stepNode is a step as a mapping node: its own fields, its kind's
// parameters when it is a fault, and its changed step (without what a
// changed step leaves out: changed).
func stepNode(st Step, changed bool) (*yaml.Node, error) {
	n := mapNode()
	a, _ := LookupAction(st.Do)
	// A required field is written even when zero (for: 0s): a fault's
	// among its parameters, another action's among the step's.
	needs, params := a.Needs, []string(nil)
	if st.Params != nil {
		needs, params = nil, a.Needs
	}
	err := addFields(n, reflect.ValueOf(&st).Elem(), func(tag string, v reflect.Value) (bool, error) {
		switch {
		case changed && notInCounterfactual[tag]:
			return true, nil
		case tag == "counterfactual":
			cf, err := stepNode(*st.Counterfactual, true)
			addPair(n, tag, cf)
			return true, err
		}
		return false, nil
	}, needs...)
	if err != nil || st.Params == nil {
		return n, err
	}
	return n, addFields(n, reflect.ValueOf(st.Params).Elem(), nil, params...)
}

// counterfactualNode is a counterfactual block: its change and expected
// verdict, and the fields its file gave.
func counterfactualNode(c *Counterfactual) *yaml.Node {
	n := mapNode()
	addValue(n, "change", c.Change)
	addValue(n, "expected", c.Expected)
	v := reflect.ValueOf(c.Conditions)
	yamlFields(v.Type(), nil, func(tag string, index []int) {
		if c.Given(tag) {
			addValue(n, tag, v.FieldByIndex(index).Interface())
		}
	})
	if c.GeneratorFault != nil {
		addValue(n, "generator_fault", *c.GeneratorFault)
	}
	return n
}

// generatorNode is a generator block, its size under the name of the
// parameter its fault draws.
func generatorNode(g *Generator) *yaml.Node {
	n := mapNode()
	addFields(n, reflect.ValueOf(g).Elem(), nil)
	if gen := g.Generated(); gen != nil && g.Size != 0 {
		var size any = time.Duration(g.Size).String()
		if gen.Unit == nemesis.UnitRate {
			size = g.Size
		}
		addValue(n, gen.Name, size)
	}
	return n
}

// addFields adds v's fields that are set, by their yaml names, in the
// struct's order; those named in always even when zero. own, when not
// nil, writes a field itself (true) or leaves it to addFields.
func addFields(n *yaml.Node, v reflect.Value, own func(tag string, v reflect.Value) (bool, error), always ...string) error {
	var err error
	yamlFields(v.Type(), nil, func(tag string, index []int) {
		fv := v.FieldByIndex(index)
		if err != nil || (fv.IsZero() && !slices.Contains(always, tag)) {
			return
		}
		if own != nil {
			var done bool
			if done, err = own(tag, fv); done || err != nil {
				return
			}
		}
		addValue(n, tag, fv.Interface())
	})
	return err
}

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

// addPair adds key: value to mapping n.
func addPair(n *yaml.Node, key string, value *yaml.Node) {
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

// addValue adds key: v to mapping n, v encoded as yaml encodes it (a
// time.Duration as Go writes it).
func addValue(n *yaml.Node, key string, v any) {
	var vn yaml.Node
	if err := vn.Encode(v); err != nil {
		panic(fmt.Sprintf("scenarios: %s: %v", key, err)) // plain values only
	}
	addPair(n, key, &vn)
}
