package hunt

import (
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
)

// TestStoryLoadsAsBuilt: a candidate's file, built in Go and written by
// scenarios.Marshal (found.yaml is one), loads with the catalogue's
// loader as the very story the hunt plays: every kind a hunt places,
// on Redis nodes, PostgreSQL and etcd, with a baseline and with none.
func TestStoryLoadsAsBuilt(t *testing.T) {
	spaces := map[string]func() (Space, error){
		"redlock": func() (Space, error) { return NewSpace("redlock", "plain", nil, time.Second, 0) },
		"redis with replicas": func() (Space, error) {
			return NewSpace("redis", "fenced", []string{"failover", "replication-lag", "drop", "reset"}, time.Second, 0)
		},
		"postgres": func() (Space, error) { return NewSpace("postgres-session", "none", nil, time.Second, 0) },
		"etcd":     func() (Space, error) { return NewSpace("etcd", "plain", nil, 2*time.Second, 2) },
		"a baseline": func() (Space, error) {
			sp, err := NewSpace("redlock-wallclock", "plain", []string{"clock-jump", "pause"}, time.Second, 0)
			if err != nil {
				return sp, err
			}
			return sp.WithBaseline("redlock")
		},
	}
	for name, space := range spaces {
		sp, err := space()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kinds := map[string]bool{}
		for i := 0; i < 60; i++ {
			p := sp.Candidate(7, i)
			s, err := sp.build(p, Meta{Name: "found", Title: "t", Source: "s", Explain: "e"}, nil)
			if err != nil {
				t.Fatalf("%s, candidate %d: %v", name, i, err)
			}
			back, err := scenarios.Parse("found.yaml", s.YAML)
			if err != nil {
				t.Fatalf("%s, candidate %d: found.yaml does not load: %v\n%s", name, i, err, s.YAML)
			}
			if !back.Same(s.Scenario) {
				t.Errorf("%s, candidate %d: found.yaml loads as another story than the one played:\n%s", name, i, s.YAML)
			}
			for _, f := range p.Faults {
				kinds[f.Kind] = true
			}
		}
		if len(kinds) < 2 {
			t.Errorf("%s: the candidates place only %v", name, kinds)
		}
	}
}
