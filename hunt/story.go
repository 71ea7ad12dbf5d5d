package hunt

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/scenarios"
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
	NodeTimeout    string          `yaml:"node_timeout,omitempty"`
	Clients        int             `yaml:"clients,omitempty"`
	Watchdog       string          `yaml:"watchdog,omitempty"`
	CheckLease     bool            `yaml:"check_lease,omitempty"`
	Replicas       bool            `yaml:"replicas,omitempty"`
	ClientCmd      []string        `yaml:"client_cmd,omitempty"`
	Expected       string          `yaml:"expected"`
	Counterfactual *counterfactual `yaml:"counterfactual,omitempty"`
	Steps          []step          `yaml:"steps"`
}

type counterfactual struct {
	Change string `yaml:"change"`
	TTL    string `yaml:"ttl,omitempty"`
	Lock   string `yaml:"lock,omitempty"`
	// ClientCmd is the baseline's program; an empty list, the harness's
	// own worker (nil: the story's clients, unchanged).
	ClientCmd *[]string `yaml:"client_cmd,omitempty"`
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
// catalogue's loader. The steps are the plan's timeline: each client
// asks at its turn, reads, works and writes, and releases; each fault
// strikes at its anchor and offset. The faults are marked cause: the
// counterfactual is the same story without them. A plan with no fault
// has the clients' timing for its cause: its counterfactual gives a
// lock whose leases expire a TTL that outlasts every client's work (the
// TTL trap), and a lock without a TTL one client alone.
func (sp Space) build(p Plan, m Meta, claims []claim) (*Story, error) {
	ttl := sp.TTL
	f := file{Name: m.Name, Title: m.Title, Source: m.Source, Explain: m.Explain, Lock: sp.Lock, TTL: dur(ttl), Expected: "unsafe", ClientCmd: sp.ClientCmd}
	writes := sp.Storage != "none"
	if writes {
		f.Storage = sp.Storage
		f.Fence = sp.fence()
	}
	if len(p.Turns) < 2 {
		return nil, fmt.Errorf("a plan needs two clients' turns, got %d", len(p.Turns))
	}
	if len(p.Turns) > 2 {
		f.Clients = len(p.Turns)
	}
	if p.Options.Watchdog {
		f.Watchdog = "token"
	}
	f.CheckLease, f.Replicas = p.Options.CheckLease, p.Options.Replicas

	nodeTimeout := scenarios.DefaultNodeTimeout
	if sp.nodeTimeout > 0 {
		nodeTimeout = sp.nodeTimeout
		if p.Options.NodeTimeout > 0 {
			nodeTimeout = time.Duration(p.Options.NodeTimeout * float64(ttl))
		}
		f.NodeTimeout = dur(nodeTimeout)
	}
	steps, err := timeline(p, writes, ttl, nodeTimeout) // timeline.go
	if err != nil {
		return nil, err
	}

	switch {
	case sp.Baseline != "":
		f.Counterfactual = &counterfactual{Change: "with lock " + sp.Baseline, Lock: sp.Baseline}
		if len(sp.ClientCmd) > 0 || len(sp.BaselineCmd) > 0 {
			cmd := slices.Clone(sp.BaselineCmd)
			if cmd == nil {
				cmd = []string{} // the harness's own worker
			}
			f.Counterfactual.ClientCmd = &cmd
			f.Counterfactual.Change += clientsOf(sp.BaselineCmd)
		}
		for i := range steps {
			steps[i].Cause = false // the lock is the cause, not the faults
		}
	case len(p.Faults) > 0:
		f.Counterfactual = &counterfactual{Change: "without the faults"}
	case sp.expires:
		long := time.Duration(math.Ceil(4*p.span())) * ttl
		long = max(long.Round(100*time.Millisecond), time.Second)
		f.Counterfactual = &counterfactual{Change: fmt.Sprintf("with a TTL of %v, which outlasts every client's work", long), TTL: dur(long)}
	default:
		// A lock without a TTL that lets a second client in with no
		// fault: alone, client 1 breaks nothing.
		f.Counterfactual = &counterfactual{Change: "with client 1 alone (the others do nothing)"}
		for i := range steps {
			if steps[i].Client > 1 {
				steps[i].Counterfactual = map[string]string{"do": "sleep", "for": "1ms"}
			}
		}
	}
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

// clientsOf says who plays a lock's clients: " played by PROGRAM", or
// " played by the harness's own worker".
func clientsOf(argv []string) string {
	if len(argv) == 0 {
		return " played by the harness's own worker"
	}
	return " played by " + strings.Join(argv, " ")
}

// span is how long the plan's workload lasts, in TTLs.
func (p Plan) span() float64 {
	end := 0.0
	for _, t := range p.Turns {
		end = max(end, t.At+t.Work)
	}
	return end
}

// faultStep is the step of one fault: the kind's own parameters, as its
// Draw makes them from the plan's draw (or, for a kind placed by shape,
// its client, links or node), written field by field.
func faultStep(f Fault, ttl time.Duration) (step, error) {
	k, ok := nemesis.LookupKind(f.Kind)
	if !ok || !k.Placeable() {
		return step{}, fmt.Errorf("fault kind %q cannot be placed by a hunt", f.Kind)
	}
	fields := map[string]any{}
	if k.Generate != nil {
		var err error
		if fields, err = paramFields(k.Generate.Params(f.aim(), f.value(ttl))); err != nil {
			return step{}, err
		}
	} else if f.Client != 0 {
		fields["client"] = f.Client
	}
	switch {
	case f.Node != "" && k.Generate == nil:
		fields["node"] = f.Node
	case len(f.Links) > 0:
		fields["links"] = f.Links
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
