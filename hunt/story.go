package hunt

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"locksim/clients"
	"locksim/nemesis"
	"locksim/scenarios"
)

// file is a scenario file as a hunt writes it: the catalogue's fields,
// only those it sets.
type file struct {
	Name           string          `yaml:"name"`
	Title          string          `yaml:"title"`
	Source         string          `yaml:"source"`
	Explain        string          `yaml:"explain"`
	Lock           string          `yaml:"lock"`
	TTL            string          `yaml:"ttl"`
	Storage        string          `yaml:"storage,omitempty"`
	Fence          string          `yaml:"fence,omitempty"`
	Expected       string          `yaml:"expected"`
	Counterfactual *counterfactual `yaml:"counterfactual,omitempty"`
	Steps          []step          `yaml:"steps"`
}

type counterfactual struct {
	Change string `yaml:"change"`
}

// step is one step as a hunt writes it; a fault's own fields (its kind's
// parameter struct) are inlined.
type step struct {
	Do        string         `yaml:"do"`
	Client    int            `yaml:"client,omitempty"`
	Work      string         `yaml:"work,omitempty"`
	For       string         `yaml:"for,omitempty"`
	Async     bool           `yaml:"async,omitempty"`
	Fault     map[string]any `yaml:",inline"`
	Cause     bool           `yaml:"cause,omitempty"`
	Expect    string         `yaml:"expect,omitempty"`
	Reason    string         `yaml:"reason,omitempty"`
	GrantedBy []string       `yaml:"granted_by,omitempty"`
	Read      *int64         `yaml:"read,omitempty"`
	Say       string         `yaml:"say,omitempty"`
	// Counterfactual changes the step in the counterfactual run.
	Counterfactual map[string]string `yaml:"counterfactual,omitempty"`
}

// Story is a plan made into a story: the scenario the runner plays and
// the text of its file.
type Story struct {
	Plan     Plan
	Scenario *scenarios.Scenario
	YAML     []byte
	steps    []step
}

// Meta is what a story's file says about where it came from.
type Meta struct {
	Name, Title, Source, Explain string
}

// build renders plan p in space sp as a scenario and loads it with the
// catalogue's loader. The faults are marked cause: the counterfactual
// is the same story without them. In a plan with no fault the work is
// the cause (the TTL trap, for a lock with a TTL): its counterfactual is
// a shorter work.
func (sp Space) build(p Plan, m Meta, claims []claim) (*Story, error) {
	ttl := sp.TTL
	at := func(x float64) string { return dur(time.Duration(x * float64(ttl))) }
	f := file{Name: m.Name, Title: m.Title, Source: m.Source, Explain: m.Explain, Lock: sp.Lock, TTL: dur(ttl), Expected: "unsafe"}
	writes := sp.Storage != "none"
	if writes {
		f.Storage = sp.Storage
		if spec, _ := clients.Lookup(sp.Lock); !spec.Fences && strings.HasPrefix(sp.Storage, "fenced") {
			f.Fence = clients.FencePostgres
		}
	}
	steps := []step{{Do: "acquire", Client: 1}}
	if writes {
		steps = append(steps, step{Do: "write", Client: 1, Work: at(p.Work), Async: true})
	}
	switch {
	case len(p.Faults) > 0:
		f.Counterfactual = &counterfactual{Change: "without the faults"}
	case writes:
		// No fault: the work itself is the cause (the TTL trap, or a lock
		// that lets a second client in while the first works).
		f.Counterfactual = &counterfactual{Change: "with work that ends well before client 2 asks"}
		steps[1].Counterfactual = map[string]string{"work": at(0.25)}
	}
	steps = append(steps, step{Do: "sleep", For: "10ms"})
	for _, fl := range p.Faults {
		st, err := faultStep(fl, ttl)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	steps = append(steps, step{Do: "sleep", For: at(max(p.Gap, 0.01)), Say: fmt.Sprintf("Time passes: %s (%s).", at(max(p.Gap, 0.01)), fmtTTL(p.Gap))},
		step{Do: "acquire", Client: 2})
	if writes {
		steps = append(steps, step{Do: "write", Client: 2})
	}
	steps = append(steps, step{Do: "release", Client: 2})
	if writes {
		steps = append(steps, step{Do: "wait", Client: 1})
	} else if p.Work > 0 {
		steps = append(steps, step{Do: "sleep", For: at(max(p.Work-p.Gap, 0.01))})
	}
	steps = append(steps, step{Do: "release", Client: 1}, step{Do: "heal"})
	for i := range steps {
		if i < len(claims) {
			claims[i].apply(&steps[i])
		}
	}
	f.Steps = steps
	var doc strings.Builder
	doc.WriteString("# yaml-language-server: $schema=schema.json\n")
	enc := yaml.NewEncoder(&doc)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	text := []byte(doc.String())
	sc, err := scenarios.Parse(m.Name+".yaml", text)
	if err != nil {
		return nil, err
	}
	return &Story{Plan: p, Scenario: sc, YAML: text, steps: steps}, nil
}

// faultStep is the step of one fault: the kind's own parameters, as its
// Draw makes them from the plan's draw, written field by field.
func faultStep(f Fault, ttl time.Duration) (step, error) {
	k, ok := nemesis.LookupKind(f.Kind)
	if !ok || k.Generate == nil {
		return step{}, fmt.Errorf("fault kind %q cannot be drawn", f.Kind)
	}
	fields, err := paramFields(k.Generate.Params(f.Client, f.Node, f.value(ttl)))
	if err != nil {
		return step{}, err
	}
	st := step{Do: f.Kind, Fault: fields, Cause: true, Say: "Fault: " + f.Describe(ttl) + "."}
	// Fields a story step has too are written as the step's (yaml will
	// not inline a key the struct has).
	if c, ok := fields["client"].(int); ok {
		st.Client = c
		delete(fields, "client")
	}
	if d, ok := fields["for"].(string); ok {
		st.For = d
		delete(fields, "for")
	}
	return st, nil
}

// paramFields lists the fields of a kind's parameters that are set, by
// their yaml names, durations written as Go writes them.
func paramFields(p any) (map[string]any, error) {
	out := map[string]any{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f, fv := v.Type().Field(i), v.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case f.Anonymous && opts == "inline":
				walk(fv)
			case name == "" || name == "-" || fv.IsZero():
			case f.Type == reflect.TypeFor[time.Duration]():
				out[name] = dur(time.Duration(fv.Int()))
			default:
				out[name] = fv.Interface()
			}
		}
	}
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("parameters %T are not a struct", p)
	}
	walk(v)
	return out, nil
}

// dur writes a duration to the millisecond, or finer when it is shorter.
func dur(d time.Duration) string {
	if d >= 10*time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
