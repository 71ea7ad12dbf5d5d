package scenarios

import (
	"strings"
	"testing"
)

func TestCatalogueLoads(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("catalogue has %d scenarios, want at least 2", len(all))
	}
	for _, sc := range all {
		if sc.Explain == "" || sc.Source == "" || sc.Title == "" {
			t.Errorf("%s: title, source and explain are required for the catalogue", sc.Name)
		}
	}
}

const good = `name: t
title: a test
lock: redlock
expected: unsafe
steps:
  - do: acquire
    client: 1
`

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top field", good + "colour: red\n", "x.yaml:8: colour: unknown field"},
		{"unknown step field", strings.Replace(good, "client: 1", "clinet: 1", 1), "x.yaml:7: steps[0].clinet: unknown field"},
		{"negative ttl", good + "ttl: -1s\n", "x.yaml:8: ttl: expected a positive duration, got -1s"},
		{"bad duration", good + "ttl: ten\n", `x.yaml:8: ttl: expected a duration like 500ms or 10s, got "ten"`},
		{"wrong type", good + "clients: many\n", `x.yaml:8: clients: expected a whole number, got "many"`},
		{"unknown lock", strings.Replace(good, "lock: redlock", "lock: zookeeper", 1), `x.yaml:3: lock: unknown lock "zookeeper"`},
		{"unknown action", strings.Replace(good, "do: acquire", "do: acquier", 1), `x.yaml:6: steps[0].do: unknown action "acquier"`},
		{"client out of range", strings.Replace(good, "client: 1", "client: 3", 1), "x.yaml:7: steps[0].client: expected a client from 1 to 2, got 3"},
		{"unknown node", good + "  - do: clock-jump\n    node: F\n    by: 1s\n", `x.yaml:9: steps[1].node: unknown node "F": this scenario has 5 Redis node(s), A to E`},
		{"missing field", good + "  - do: clock-jump\n    node: C\n", `steps[1].by: missing: "clock-jump" needs by`},
		{"bad verdict", strings.Replace(good, "expected: unsafe", "expected: broken", 1), `x.yaml:4: expected: expected one of safe, unsafe, leaked, got "broken"`},
		{"bad yaml", "name: [\n", "x.yaml:1: not valid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("parsed; want error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
	if _, err := Parse("x.yaml", []byte(good)); err != nil {
		t.Fatalf("good scenario: %v", err)
	}
}

func TestFindSuggestsCloseNames(t *testing.T) {
	_, err := Find("redlock-clock")
	nf, ok := err.(*NotFoundError)
	if !ok {
		t.Fatalf("err = %v, want NotFoundError", err)
	}
	if len(nf.Close) == 0 || nf.Close[0] != "redlock-clock-jump" {
		t.Fatalf("close names = %v, want redlock-clock-jump first", nf.Close)
	}
	if _, err := Find("redlock-clock-jump"); err != nil {
		t.Fatal(err)
	}
}
