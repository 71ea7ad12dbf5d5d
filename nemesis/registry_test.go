package nemesis

import (
	"testing"
	"time"
)

// TestRegistry: every fault kind is documented and builds a fault (or
// heals one), and the checks refuse what a scenario cannot honour.
func TestRegistry(t *testing.T) {
	if len(Kinds()) < 11 {
		t.Fatalf("only %d fault kinds registered", len(Kinds()))
	}
	for _, k := range Kinds() {
		if k.Doc == "" {
			t.Errorf("%s has no doc", k.Name)
		}
		if k.New != nil {
			f := k.New(Params{Client: 1, Node: "A", Nodes: []string{"A"}, For: time.Second, By: time.Second, Delay: time.Millisecond, Rate: 1.5})
			if f == nil || f.Name() == "" || f.On() == "" {
				t.Errorf("%s built %v", k.Name, f)
			}
		}
	}
	refuse := []struct {
		kind, field string
		p           Params
		f           Facts
	}{
		{"clock-jump", "do", Params{Given: map[string]bool{"by": true}}, Facts{}},
		{"clock-jump", "node", Params{Node: "A", Given: map[string]bool{"node": true}}, Facts{NodeClockless: "no clock fault reaches an etcd member"}},
		{"clock-drift", "rate", Params{Node: "A", Rate: 0}, Facts{}},
		{"failover", "do", Params{Node: "A"}, Facts{}},
		{"latency", "stream", Params{Stream: "sideways"}, Facts{}},
		{"crash", "node_clock", Params{Node: "A", NodeClock: true}, Facts{}},
		{"pause", "do", Params{Given: map[string]bool{"client": true, "node": true}}, Facts{}},
	}
	for _, c := range refuse {
		k, ok := LookupKind(c.kind)
		if !ok || k.Check == nil {
			t.Fatalf("%s has no check", c.kind)
		}
		err := k.Check(c.p, c.f)
		if err == nil || err.Field != c.field {
			t.Errorf("%s %+v: got %v, want a refusal of %s", c.kind, c.p, err, c.field)
		}
	}
	if k, _ := LookupKind("failover"); k.Check(Params{Node: "A"}, Facts{Replicas: true}) != nil {
		t.Error("failover with replicas refused")
	}
	resume, _ := LookupKind("resume")
	if !resume.Heals(Params{Client: 2}, &Pause{Client: 2}) || resume.Heals(Params{Client: 2}, &Pause{Client: 1}) {
		t.Error("resume heals the wrong pause")
	}
}
