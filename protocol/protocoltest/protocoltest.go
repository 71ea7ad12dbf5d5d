// Package protocoltest checks lines against the worker protocol's JSON
// Schema (docs/protocol.schema.json), for the tests of package protocol,
// which generate the schema and check recorded sessions with it, and of
// package worker, whose Go worker speaks it.
package protocoltest

import (
	"bytes"
	"os"
	"strings"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaID is the schema's $id; a line is validated against one of its
// definitions, SchemaID + "#/$defs/Hello" say.
const SchemaID = "urn:locksim:worker-protocol"

// Schema is the checked-in schema compiled, by definition: Hello, Command,
// Reply, and "" for any line.
type Schema map[string]*validator.Schema

// Load compiles the schema in file (docs/protocol.schema.json, as the
// test's directory reaches it).
func Load(t testing.TB, file string) Schema {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := validator.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	out := Schema{}
	for _, def := range []string{"Hello", "Command", "Reply", ""} {
		sch, err := c.Compile(SchemaID + "#" + strings.TrimSuffix("/$defs/"+def, "/$defs/"))
		if err != nil {
			t.Fatal(err)
		}
		out[def] = sch
	}
	return out
}

// Valid validates one line against def ("": any line).
func (s Schema) Valid(def string, line []byte) error {
	v, err := validator.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return err
	}
	return s[def].Validate(v)
}
