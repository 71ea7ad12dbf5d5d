package scenarios

import (
	"testing"
	"time"

	"github.com/locksim/locksim/nemesis"
)

// TestMarshalCatalogue: every catalogue story, written by Marshal and
// read back by Parse, is the same story, and writes the same file again.
func TestMarshalCatalogue(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		text, err := Marshal(sc)
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		back, err := Parse(sc.File, text)
		if err != nil {
			t.Fatalf("%s: written, it does not load: %v\n%s", sc.Name, err, text)
		}
		if !sc.Same(back) {
			t.Errorf("%s: written and read back, another story:\n%s", sc.Name, text)
		}
		again, _ := Marshal(back)
		if string(again) != string(text) {
			t.Errorf("%s: written twice, two files:\n%s\n---\n%s", sc.Name, text, again)
		}
	}
}

// TestBuild: a story built in Go is validated as a file is (a fault's
// missing field refused), and its file, read back, is the same story:
// a fault's own fields, a changed step, a counterfactual that gives a
// field its zero value.
func TestBuild(t *testing.T) {
	pause := &nemesis.PauseParams{ClientOrNode: nemesis.ClientOrNode{Client: 1}, For: 1500 * time.Millisecond}
	sc := Scenario{Name: "built", Title: "t", Source: "s", Explain: "e", Expected: "unsafe",
		Conditions: Conditions{Lock: "redis", TTL: Duration{time.Second}, Storage: "plain", Watchdog: "token"},
		Steps: []Step{
			{Do: "acquire", Client: 1},
			{Do: "pause", Params: pause, Say: "Client 1 stops."},
			{Do: "acquire", Client: 2, Say: "Client 2 asks.", Counterfactual: &Step{Do: "sleep", For: Duration{time.Millisecond}, Say: "Client 2 asks."}},
			{Do: "write", Client: 1, Work: Duration{100 * time.Millisecond}},
			{Do: "heal"},
		},
		Counterfactual: &Counterfactual{Change: "without the watchdog"}}
	sc.Counterfactual.Gives("watchdog")
	built, err := Build("built.yaml", sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := built.CounterfactualChanges(); len(got) != 2 || got[0] != "watchdog: token -> none" {
		t.Errorf("the counterfactual changes %q", got)
	}
	text, err := Marshal(built)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("built.yaml", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !built.Same(back) {
		t.Errorf("built and read back, another story:\n%s\n%+v\n%+v", text, built.Steps, back.Steps)
	}
	bad := sc
	bad.Steps = append([]Step{{Do: "latency", Params: &nemesis.LatencyParams{ClientLinks: nemesis.ClientLinks{Client: 1, Links: []string{"storage"}}}}}, sc.Steps...)
	if _, err := Build("bad.yaml", bad); err == nil {
		t.Errorf("a latency without its delay is accepted")
	}
}
