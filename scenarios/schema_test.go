package scenarios

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite schema.json and ../docs/scenarios.md from the Go types")

// TestSchemaIsCurrent: schema.json (embedded, printed by sim schema) and
// docs/scenarios.md are what the Go types and their comments give today.
func TestSchemaIsCurrent(t *testing.T) {
	fresh, err := generateSchema(".")
	if err != nil {
		t.Fatal(err)
	}
	fresh = append(fresh, '\n')
	if *update {
		if err := os.WriteFile("schema.json", fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		SchemaJSON = fresh
	}
	if !bytes.Equal(fresh, SchemaJSON) {
		t.Fatalf("schema.json is not current: go test ./scenarios -run TestSchemaIsCurrent -update")
	}
	ref, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	const doc = "../docs/scenarios.md"
	if *update {
		if err := os.WriteFile(doc, []byte(ref), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if old, err := os.ReadFile(doc); err != nil || string(old) != ref {
		t.Fatalf("%s is not current (%v): go test ./scenarios -run TestSchemaIsCurrent -update", doc, err)
	}
	for _, want := range []string{"| `ttl` | duration |", "| `do` | string |", "| `pause` | duration |", "| `generator_fault` |"} {
		if !strings.Contains(ref, want) {
			t.Errorf("the field reference lacks %q", want)
		}
	}
}

// compiled is the schema, compiled by a validator.
func compiled(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asJSON reads a YAML document as the JSON value a validator checks.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaValidatesCatalogue: every catalogue file names the schema on
// its first line and is valid against it; a misspelt field, an unknown
// lock and a duration written as a number are not.
func TestSchemaValidatesCatalogue(t *testing.T) {
	s := compiled(t)
	files, err := catalogue.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := catalogue.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(data), "\n"); first != "# yaml-language-server: $schema=schema.json" {
			t.Errorf("%s: first line %q does not name the schema", f.Name(), first)
		}
		if err := s.Validate(asJSON(t, data)); err != nil {
			t.Errorf("%s: %v", f.Name(), err)
		}
	}
	good, err := catalogue.ReadFile("redlock-clock-jump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"misspelt field": strings.Replace(string(good), "\nttl:", "\ntll:", 1),
		"unknown lock":   strings.Replace(string(good), "\nlock: redlock", "\nlock: redlok", 1),
		"bare number":    strings.Replace(string(good), "\nttl: 10s", "\nttl: 10", 1),
		"misspelt step":  strings.Replace(string(good), "granted_by:", "granted_bye:", 1),
		// A fault step takes its own kind's fields only, and needs those
		// its kind needs; a story step takes none of a fault's.
		"another fault's field":         strings.Replace(string(good), "    node: C\n", "    node: C\n    delay: 1s\n", 1),
		"a fault without by":            strings.Replace(string(good), "    by: 15s\n", "", 1),
		"a fault's field on an acquire": strings.Replace(string(good), "granted_by:", "by: 1s\n    granted_by:", 1),
		// Each kind has its own branch (oneOf on do): a field is typed
		// as its own kind says, whatever another kind's of the same
		// name is.
		"a jump's by as a number":                      strings.Replace(string(good), "    by: 15s\n", "    by: 15\n", 1),
		"a drift's rate on a jump":                     strings.Replace(string(good), "    by: 15s\n", "    by: 15s\n    rate: 1.5\n", 1),
		"a story field in a counterfactual of a fault": strings.Replace(string(good), "    by: 15s\n", "    by: 15s\n    counterfactual: {granted_by: [A]}\n", 1),
		// A setting of another backend's servers (settings.go).
		"pgbouncer on a Redlock story": strings.Replace(string(good), "\nttl: 10s", "\nttl: 10s\npgbouncer: transaction", 1),
	} {
		if bad == string(good) {
			t.Fatalf("%s: the replacement changed nothing", name)
		}
		if err := s.Validate(asJSON(t, []byte(bad))); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
