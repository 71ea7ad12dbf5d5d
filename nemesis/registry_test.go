package nemesis

import (
	"reflect"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// decodeParams decodes YAML into a new parameter struct of kind, as the
// loader does.
func decodeParams(t *testing.T, kind, doc string) (Kind, any) {
	t.Helper()
	k, ok := LookupKind(kind)
	if !ok {
		t.Fatalf("no kind %s", kind)
	}
	p := k.Params()
	if err := yaml.Unmarshal([]byte(doc), p); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return k, p
}

// TestRegistry: every fault kind is documented, owns a parameter struct
// and builds a fault (or heals one), and the checks refuse what a
// scenario cannot honour.
func TestRegistry(t *testing.T) {
	if len(Kinds()) < 11 {
		t.Fatalf("only %d fault kinds registered", len(Kinds()))
	}
	for _, k := range Kinds() {
		if k.Doc == "" {
			t.Errorf("%s has no doc", k.Name)
		}
		p := k.Params()
		if reflect.TypeOf(p).Kind() != reflect.Pointer || reflect.TypeOf(p).Elem().Kind() != reflect.Struct {
			t.Errorf("%s: parameters %T are not a pointer to a struct", k.Name, p)
		}
		if k.New != nil {
			f := k.New(p)
			if f == nil || f.Name() == "" {
				t.Errorf("%s built %v", k.Name, f)
			}
		}
	}
	refuse := []struct {
		kind, field, params string
		f                   Facts
	}{
		{"clock-jump", "do", "by: 1s", Facts{}},
		{"clock-jump", "node", "{node: A, by: 1s}", Facts{NodeClockless: "no clock fault reaches an etcd member"}},
		{"clock-drift", "rate", "{node: A, rate: 0}", Facts{}},
		{"failover", "do", "node: A", Facts{}},
		{"latency", "stream", "{client: 1, links: [A], delay: 1ms, stream: sideways}", Facts{}},
		{"latency", "jitter", "{client: 1, links: [A], delay: 1ms, jitter: -1ms}", Facts{}},
		{"crash", "node_clock", "{node: A, node_clock: true}", Facts{}},
		{"crash", "for", "{node: A, for: -1s}", Facts{}},
		{"power-loss", "do", "node: A", Facts{}},
		{"power-loss", "for", "{node: A, for: -1s}", Facts{Persistent: true}},
		{"shutdown", "for", "{node: A, for: -1s}", Facts{}},
		{"pause", "do", "{client: 1, node: A}", Facts{}},
		{"resume", "do", "{}", Facts{}},
	}
	for _, c := range refuse {
		k, p := decodeParams(t, c.kind, c.params)
		if k.Check == nil {
			t.Fatalf("%s has no check", c.kind)
		}
		err := k.Check(p, c.f)
		if err == nil || err.Field != c.field {
			t.Errorf("%s %s: got %v, want a refusal of %s", c.kind, c.params, err, c.field)
		}
	}
	if k, p := decodeParams(t, "failover", "node: A"); k.Check(p, Facts{Replicas: true}) != nil {
		t.Error("failover with replicas refused")
	}
	if k, p := decodeParams(t, "power-loss", "{node: C, for: 2s}"); k.Check(p, Facts{Persistent: true}) != nil {
		t.Error("power-loss on nodes that keep a file refused")
	} else if f := Unwrap(k.New(p)).(*PowerLoss); f.Node != "C" || f.RestartAfter != 2*time.Second || f.lost.Load() != -1 {
		t.Errorf("power-loss built %+v from node C, for 2s", f)
	}
	k, p := decodeParams(t, "pause", "{client: 2, for: 300ms}")
	if f := Unwrap(k.New(p)).(*Pause); f.Client != 2 || f.For != 300*time.Millisecond {
		t.Errorf("pause built %+v from client 2, for 300ms", f)
	}
	resume, p := decodeParams(t, "resume", "client: 2")
	pauseOf := func(c int) Fault { return &named{Breaker: &Pause{Client: c}, kind: "pause"} }
	if !resume.Heals(p, pauseOf(2)) || resume.Heals(p, pauseOf(1)) {
		t.Error("resume heals the wrong pause")
	}
}

// TestDrawn: each kind a generator draws names its parameter once, and a
// drawn fault is the one a step with the same value builds.
func TestDrawn(t *testing.T) {
	seen := map[string]string{}
	for _, k := range GeneratedKinds() {
		g := k.Generate
		if prev, dup := seen[g.Name]; dup {
			t.Errorf("%s and %s both draw %s", prev, k.Name, g.Name)
		}
		seen[g.Name] = k.Name
		if g.Doc == "" || g.What == "" || !(g.Range[0] < g.Range[1]) {
			t.Errorf("%s: drawn %+v lacks a doc, a name for plots or a range", k.Name, g.Drawn)
		}
		if found, ok := LookupDrawn(g.Name); !ok || found.Name != k.Name {
			t.Errorf("LookupDrawn(%s) = %s", g.Name, found.Name)
		}
	}
	if len(seen) < 4 {
		t.Errorf("generators draw only %v", seen)
	}
	pause, _ := LookupKind("pause")
	if f := pause.Generate.Build(Aim{Client: 2}, float64(300*time.Millisecond)); f.Detail() != "300ms" || f.On() != "client 2" {
		t.Errorf("a drawn pause of client 2 for 300ms is %s (%s)", f.On(), f.Detail())
	}
	drift, _ := LookupKind("clock-drift")
	if f := Unwrap(drift.Generate.Build(Aim{Client: 1, Node: "C"}, 1.5)).(*ClockDrift); f.Node != "C" || f.Rate != 1.5 {
		t.Errorf("a drawn drift of C at 1.5 is %+v", f)
	}
}

// TestKindsRecordTheirStepName: a fault records the name of the step that
// injects it (the runner finds its kind by it, and a history reads as
// its story) and the effect its kind declares (the timing guard and the
// hunt read the kind's); a kind a hunt places by shape builds its fault
// from what it is aimed at.
func TestKindsRecordTheirStepName(t *testing.T) {
	aims := []Aim{{Client: 1, Links: []string{"A", "B"}}, {Node: "A"}, {Client: 2}}
	for _, k := range Kinds() {
		if k.New == nil {
			if k.Effect != "" || k.Placeable() {
				t.Errorf("%s builds no fault, yet says an effect %q or a placement", k.Name, k.Effect)
			}
			continue
		}
		for _, a := range aims {
			var f Fault
			switch {
			case k.Place != nil:
				f = k.New(k.Place(a))
			case k.Generate != nil:
				f = k.Generate.Build(a, 1)
			default:
				f = k.New(k.Params())
			}
			if f.Name() != k.Name {
				t.Errorf("do: %s builds a fault that records %q", k.Name, f.Name())
			}
			if e := f.Fields().Effect; e != k.Effect {
				t.Errorf("%s: its faults record the effect %q, its kind says %q", k.Name, e, k.Effect)
			}
		}
		if k.Place != nil {
			aim := k.New(k.Place(aims[0])).Fields()
			if k.Shape.Links || k.Shape.LockLinks {
				if aim.Client != 1 || len(aim.Links) != 2 {
					t.Errorf("%s placed on client 1's links A, B strikes %+v", k.Name, aim)
				}
			} else if aim := k.New(k.Place(aims[1])).Fields(); aim.Node != "A" && !(len(aim.Links) == 1 && aim.Links[0] == "A") {
				t.Errorf("%s placed on node A strikes %+v", k.Name, aim)
			}
		}
	}
	for _, name := range []string{"drop", "reset", "replication-lag"} {
		if k, ok := LookupKind(name); !ok || !k.Placeable() {
			t.Errorf("%s is not a kind a hunt places", name)
		}
	}
}

// TestKindsSayTheirRealisticSize: every kind that builds faults says what
// size of it real machines have, and a drift past NTP's slew limit is
// outside it while one within it is not.
func TestKindsSayTheirRealisticSize(t *testing.T) {
	for _, k := range Kinds() {
		if k.New != nil && k.Realistic == "" {
			t.Errorf("%s says no realistic size", k.Name)
		}
	}
	k, _ := LookupKind("clock-drift")
	for rate, outside := range map[float64]bool{1.5: true, 0.5: true, 1.1: true, 1.0004: false, 0.9996: false} {
		p := &ClockDriftParams{ClientOrNode: ClientOrNode{Node: "A"}, Rate: rate}
		if got := k.Unrealistic(p) != ""; got != outside {
			t.Errorf("drift x%g: outside the realistic range = %v, want %v (%q)", rate, got, outside, k.Unrealistic(p))
		}
	}
}

// TestDrawsUnrealistic: a hunt that searches only what machines have
// leaves out the clock-drift, whose every draw (1x to 3x) is past 500
// ppm, and keeps every kind whose sizes are unbounded.
func TestDrawsUnrealistic(t *testing.T) {
	for _, k := range Kinds() {
		got := k.DrawsUnrealistic() != ""
		if got != (k.Name == "clock-drift") {
			t.Errorf("%s: draws only unrealistic sizes = %v (%q)", k.Name, got, k.DrawsUnrealistic())
		}
	}
}
