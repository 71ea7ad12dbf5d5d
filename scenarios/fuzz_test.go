package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/nemesis"
)

// fuzzMaxInput bounds a fuzz input: a scenario file is a few KiB.
const fuzzMaxInput = 64 << 10

// fuzzHang is how long one Parse may take before the fuzz target calls it
// a hang. Parsing a 64 KiB file takes milliseconds; the margin is wide so
// that a loaded machine never makes it flaky.
const fuzzHang = 10 * time.Second

// fuzzBroken are scenarios the loader must refuse with one clear line.
var fuzzBroken = []string{
	"",
	"\n",
	"name: [",
	"- a\n- b\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: acquire\n    client: 3\n",
	// A mapping where a scalar or a list of scalars belongs put yaml's
	// multi-line "unmarshal errors" in the error.
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: acquire\n    client: {a: 1}\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: partition\n    client: 1\n    links: [{a: 1}, [b]]\n",
	"name: x\nlock: redis\nexpected: unsafe\nttl: [1s]\nsteps:\n  - do: sleep\n    for: 1s\n",
	"name: x\nlock: redis\nexpected: unsafe\nttl: -1s\nsteps:\n  - do: sleep\n    for: 1s\n",
	"name: x\nlock: redis\nexpected: unsafe\nclients: 0x7fffffffffffffff\nsteps:\n  - do: sleep\n    for: 1s\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: sleep\n    for: 1s\n    cause: true\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: sleep\n    for: 1s\n    cause: true\ncounterfactual:\n  change: nothing\n  lock: nope\n",
	"name: x\nlock: redis\nexpected: unsafe\nstorage: plain\ngenerator:\n  fault: clock-drift\ncounterfactual:\n  change: c\n  generator_fault: none\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: acquire\n    client: 1\n    counterfactual:\n      counterfactual:\n        do: nap\n",
	"name: &a x\nlock: *a\n",
	"a: &a [*a, *a]\n",
	"name: x\nname: y\n",
	"name: \"x\\ny\"\nlock: redis\n",
	"name: x\nlock: \"re\\ndis\"\n",
	"\xff\xfe",
	"name: x\n\tlock: redis\n",
	// Found by reading the loader beside FuzzParse: an unknown key with a
	// line break put the break in the error.
	"\"a\\nb\": 1\n",
	"name: x\nlock: redis\nexpected: unsafe\nsteps:\n  - do: sleep\n    \"fo\\nr\": 1s\n",
	"? [a]\n: 1\n",
}

// FuzzParse: the loader never panics or hangs; it refuses a bad file with
// one line that names the file, and a scenario it accepts keeps the rules
// validate enforces, its counterfactual included.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no scenarios to seed the corpus with (%v)", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range fuzzBroken {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		type parsed struct {
			sc  *Scenario
			err error
		}
		done := make(chan parsed, 1)
		go func() {
			sc, err := Parse("x.yaml", data)
			done <- parsed{sc, err}
		}()
		var p parsed
		select {
		case p = <-done:
		case <-time.After(fuzzHang):
			t.Fatalf("Parse still running after %v", fuzzHang)
		}
		if p.err != nil {
			msg := p.err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "x.yaml") {
				t.Fatalf("error is not one line naming x.yaml: %q", msg)
			}
			if p.sc != nil {
				t.Fatalf("Parse returned a scenario and an error: %v", p.err)
			}
			return
		}
		checkParsed(t, p.sc, "x.yaml")
	})
}

// checkParsed checks what validate promises of an accepted scenario.
func checkParsed(t *testing.T, sc *Scenario, file string) {
	t.Helper()
	if sc == nil {
		t.Fatal("Parse returned neither a scenario nor an error")
	}
	if sc.File != file {
		t.Fatalf("File = %q, want %q", sc.File, file)
	}
	if !validName.MatchString(sc.Name) {
		t.Fatalf("name %q accepted", sc.Name)
	}
	if _, err := clients.Lookup(sc.Lock); err != nil {
		t.Fatalf("lock %q accepted: %v", sc.Lock, err)
	}
	if !slices.Contains(Verdicts, sc.Expected) {
		t.Fatalf("expected %q accepted", sc.Expected)
	}
	if sc.Nodes < 0 || sc.Nodes > 9 || sc.Clients < 1 || sc.Clients > 64 {
		t.Fatalf("nodes %d, clients %d accepted", sc.Nodes, sc.Clients)
	}
	if sc.TTL.Duration <= 0 || sc.NodeTimeout.Duration <= 0 || sc.Margin.Duration < 0 || sc.Key == "" {
		t.Fatalf("ttl %v, node_timeout %v, margin %v, key %q accepted", sc.TTL, sc.NodeTimeout, sc.Margin, sc.Key)
	}
	if (sc.Generator == nil) == (len(sc.Steps) == 0) {
		t.Fatalf("a scenario needs steps or a generator, not both: %d steps, generator %v", len(sc.Steps), sc.Generator != nil)
	}
	if g := sc.Generator; g != nil {
		if g.Duration.Duration <= 0 || g.Work.Duration <= 0 || g.Backoff.Duration <= 0 || g.Trials < 1 ||
			g.Faults < 0 || g.Faults > 100 || !contains(GeneratorFaults, g.Fault) {
			t.Fatalf("generator %+v accepted", *g)
		}
	}
	for i, st := range sc.Steps {
		a, ok := LookupAction(st.Do)
		if !ok {
			t.Fatalf("steps[%d]: action %q accepted", i, st.Do)
		}
		aim := st.Aim()
		if aim.Client < 0 || aim.Client > sc.Clients {
			t.Fatalf("steps[%d]: client %d of %d accepted", i, aim.Client, sc.Clients)
		}
		if contains(a.Needs, "client") && aim.Client < 1 {
			t.Fatalf("steps[%d]: %s without a client accepted", i, st.Do)
		}
		// A node is one of the story's (A...), or its PostgreSQL server
		// (pg) for a kind that strikes it, in a story whose lock runs there.
		k, isKind := nemesis.LookupKind(st.Do)
		spec, _ := clients.Lookup(sc.Lock)
		onPostgres := aim.Node == nemesis.PGNode && isKind && k.OnPostgres && spec.Backend == clients.PostgresBackend
		if aim.Node != "" && !onPostgres && (len(aim.Node) != 1 || aim.Node[0] < 'A' || int(aim.Node[0]-'A') >= sc.Nodes) {
			t.Fatalf("steps[%d]: node %q of %d accepted", i, aim.Node, sc.Nodes)
		}
		_ = st.Describe()
	}
	if sc.Counterfactual == nil {
		return
	}
	if c := sc.Counterfactual.Expected; !slices.Contains(Verdicts, c) || c == sc.Expected {
		t.Fatalf("counterfactual expecting %q (the story: %q) accepted", c, sc.Expected)
	}
	_ = sc.CounterfactualChanges()
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatalf("Parse accepted the scenario, CounterfactualScenario refuses it: %v", err)
	}
	if !cf.IsCounterfactual || cf.Counterfactual != nil || cf.Expected != sc.Counterfactual.Expected {
		t.Fatalf("counterfactual scenario: IsCounterfactual %v, Counterfactual %v, expected %q", cf.IsCounterfactual, cf.Counterfactual != nil, cf.Expected)
	}
	for i, st := range cf.Steps {
		if st.Cause || st.Counterfactual != nil || st.Expect != "" {
			t.Fatalf("counterfactual steps[%d] keeps its cause, counterfactual or assertion: %+v", i, st)
		}
		if _, ok := LookupAction(st.Do); !ok || st.Client < 0 || st.Client > cf.Clients {
			t.Fatalf("counterfactual steps[%d]: action %q, client %d of %d", i, st.Do, st.Client, cf.Clients)
		}
	}
}
