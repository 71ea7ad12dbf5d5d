package scenarios

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/locksim/locksim/clients"
)

// TestMarshalReadsBack: every catalogue story, each played with every
// lock that can tell it and each counterfactual, written by MarshalResolved, is
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
		text, err := MarshalResolved(sc)
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
		if c, b := sc.Counterfactual, back.Counterfactual; c != nil && !slices.Equal(givenFields(c), givenFields(b)) {
			t.Errorf("%s: the counterfactual gives %v, read back %v", sc.Name, givenFields(c), givenFields(b))
		}
		if again, _ := MarshalResolved(back); string(again) != string(text) {
			t.Errorf("%s: written again:\n%s\nfirst:\n%s", sc.Name, again, text)
		}
	}
}

// bare is sc without where its fields came from, as Same compares it,
// nor its being a counterfactual (a counterfactual written is a story).
func bare(sc *Scenario) Scenario {
	b := sc.bare()
	b.IsCounterfactual = false
	return b
}

// givenFields lists the fields a counterfactual block gives but its expected
// verdict (written once it is worked out).
func givenFields(c *Counterfactual) []string {
	return slices.DeleteFunc(slices.Sorted(maps.Keys(c.givenAt)), func(k string) bool { return k == "expected" })
}
