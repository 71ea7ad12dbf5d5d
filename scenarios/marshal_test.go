package scenarios

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/locksim/locksim/clients"
)

// TestMarshalReadsBack: every catalogue story, each played with every
// lock that can tell it and each counterfactual, written by Marshal, is
// read back by Parse as the same story, and written again the same.
func TestMarshalReadsBack(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var stories []*Scenario
	for _, sc := range all {
		stories = append(stories, sc)
		for _, lock := range clients.Names() {
			if v, err := Resolve(sc, Changes{Lock: lock}); err == nil && lock != sc.Lock {
				stories = append(stories, v.Scenario)
			}
		}
		if cf, err := sc.CounterfactualScenario(); err == nil {
			stories = append(stories, cf)
		}
	}
	for _, sc := range stories {
		text, err := Marshal(sc)
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		back, err := Parse(sc.Name+".yaml", text)
		if err != nil {
			t.Errorf("%s (%s) written:\n%s\nread back: %v", sc.Name, sc.Title, text, err)
			continue
		}
		if !reflect.DeepEqual(bare(back), bare(sc)) {
			t.Errorf("%s (%s): read back as another story:\n%s", sc.Name, sc.Title, text)
		}
		if c, b := sc.Counterfactual, back.Counterfactual; c != nil && !slices.Equal(given(c), given(b)) {
			t.Errorf("%s: the counterfactual gives %v, read back %v", sc.Name, given(c), given(b))
		}
		if again, _ := Marshal(back); string(again) != string(text) {
			t.Errorf("%s: written again:\n%s\nfirst:\n%s", sc.Name, again, text)
		}
	}
}

// bare is a copy of sc without where its fields came from (file, lines)
// or what the loader builds from them.
func bare(sc *Scenario) Scenario {
	b := *sc
	b.File, b.lines, b.IsCounterfactual, b.cf, b.resolved = "", nil, false, nil, false
	b.Steps = nil
	for _, st := range sc.Steps {
		b.Steps = append(b.Steps, bareStep(st))
	}
	if c := sc.Counterfactual; c != nil {
		cp := *c
		cp.lines = nil
		b.Counterfactual = &cp
	}
	if g := sc.Generator; g != nil {
		cp := *g
		cp.lines, cp.sizeOf = nil, ""
		b.Generator = &cp
	}
	return b
}

func bareStep(st Step) Step {
	st.Line, st.lines, st.told, st.changed = 0, nil, 0, false
	if c := st.Counterfactual; c != nil {
		cp := bareStep(*c)
		st.Counterfactual = &cp
	}
	return st
}

// given lists the fields a counterfactual block gives but its expected
// verdict (written once it is worked out).
func given(c *Counterfactual) []string {
	return slices.DeleteFunc(slices.Sorted(maps.Keys(c.lines)), func(k string) bool { return k == "expected" })
}
