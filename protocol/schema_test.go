// schema_test.go generates docs/protocol.schema.json, the JSON Schema of
// the worker protocol's lines, from the Go types that read and write them
// (Hello, Command, Reply, history.Event) and their doc comments, and checks
// that every line the example client programs sent in their recorded
// sessions (testdata/sessions, recorded by testdata/sessions/record) is
// valid against it. The Go worker's lines are checked in package worker.

package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol/protocoltest"
	"github.com/locksim/locksim/storage"
)

var update = flag.Bool("update", false, "rewrite ../docs/protocol.schema.json from the Go types")

// schemaFile is the protocol's schema, checked in beside docs/protocol.md.
const schemaFile = "../docs/protocol.schema.json"

// clientEventTypes and clientEventOps are the event types and operations a
// client reports (a fault, a heal and the harness's own notes are the
// harness's).
var (
	clientEventTypes = []history.Type{history.Invoke, history.Ok, history.Fail, history.Info, history.Note}
	clientEventOps   = []string{history.OpAcquire, history.OpRelease, history.OpExtend, history.OpWrite, history.OpRenew, history.OpCheck}
	// harnessEventFields are history.Event's fields of the events the
	// harness writes itself (a fault's, a job note's): a client sends
	// none of them. (It may send seq and process, as the Go worker does,
	// 0: the harness sets them.)
	harnessEventFields = []string{"target", "fault", "job", "period"}
	// goOnlyOps are the commands only the harness's own worker is sent.
	goOnlyOps = []string{OpLoop, OpStopLoop, OpHold, OpResume}
)

// generateSchema builds the protocol's schema from the Go types and
// their doc comments (read from the source directories).
func generateSchema() ([]byte, error) {
	r := &jsonschema.Reflector{}
	for pkg, dir := range map[string]string{"protocol": ".", "history": "../history", "clients": "../clients"} {
		if err := r.AddGoComments("github.com/locksim/locksim/"+pkg, dir); err != nil {
			return nil, err
		}
	}
	s := &jsonschema.Schema{Version: jsonschema.Version, ID: protocoltest.SchemaID, Title: "locksim worker protocol",
		Description: "One line of locksim worker protocol v" + itoa(MinProtocolVersion) + " to v" + itoa(ProtocolVersion) +
			" (docs/protocol.md): a client's hello (its first line), a command of the harness, or a client's reply.",
		Definitions: jsonschema.Definitions{}}
	// A line is one of the three; an own lock (in a hello's locks) and a
	// node (in init's config) are read by hand (UnmarshalJSON).
	lines := []any{&Hello{}, &Command{}, &Reply{}}
	for _, v := range append(lines, &OwnLock{}, &clients.Node{}) {
		one := r.Reflect(v)
		for name, d := range one.Definitions {
			s.Definitions[name] = d
		}
		if len(s.OneOf) < len(lines) {
			s.OneOf = append(s.OneOf, &jsonschema.Schema{Ref: one.Ref})
		}
	}

	hello := s.Definitions["Hello"]
	locks, _ := hello.Properties.Get("locks")
	locks.Items = &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string"}, {Ref: "#/$defs/OwnLock"}}}
	enum(hello, "ops", Ops)
	enum(hello, "storage_modes", storage.Modes())
	enum(hello, "fences", Fences)
	enum(hello, "watchdogs", Watchdogs)
	p, _ := hello.Properties.Get("protocol")
	p.Minimum, p.Maximum = json.Number(itoa(MinProtocolVersion)), json.Number(itoa(ProtocolVersion))
	s.Definitions["OwnLock"].Required = []string{"name", "like"}

	cmd := s.Definitions["Command"]
	op, _ := cmd.Properties.Get("op")
	op.Enum = toAny(append([]string{"init", history.OpAcquire, history.OpRelease, history.OpExtend, history.OpWrite}, goOnlyOps...))
	init := s.Definitions["Init"]
	mode, _ := init.Properties.Get("storage_mode")
	mode.Enum = toAny(append([]storage.Mode{""}, storage.Modes()...))
	// Config's servers are a field a backend, named as the backend
	// (clients.Config.UnmarshalJSON).
	s.Definitions["Config"].AdditionalProperties = &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Ref: "#/$defs/Node"}}

	// A reply is a command's (id) or a stall, sent on its own.
	reply := s.Definitions["Reply"]
	reply.Required = nil
	reply.AnyOf = []*jsonschema.Schema{{Required: []string{"id"}}, {Required: []string{"stall"}}}

	ev := s.Definitions["Event"]
	ev.Description = "A history event of the command, as the client reports it: t and lease_end are its CLOCK_MONOTONIC readings; the harness sets seq and process."
	for _, f := range harnessEventFields {
		ev.Properties.Delete(f)
	}
	delete(s.Definitions, "FaultFields")
	ev.Required = []string{"t", "type", "op", "key"}
	enum(ev, "type", clientEventTypes)
	enum(ev, "op", clientEventOps)
	enum(ev, "reason", history.Reasons)
	return json.MarshalIndent(s, "", "  ")
}

// enum sets the values property name (or its items) of def may take.
func enum[T any](def *jsonschema.Schema, name string, values []T) {
	p, _ := def.Properties.Get(name)
	if p.Items != nil {
		p = p.Items
	}
	p.Enum = toAny(values)
}

func toAny[T any](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestProtocolSchemaIsCurrent: docs/protocol.schema.json is what the Go
// types and their comments give today.
func TestProtocolSchemaIsCurrent(t *testing.T) {
	fresh, err := generateSchema()
	if err != nil {
		t.Fatal(err)
	}
	fresh = append(fresh, '\n')
	if *update {
		if err := os.WriteFile(schemaFile, fresh, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(schemaFile)
	if err != nil || !bytes.Equal(old, fresh) {
		t.Fatalf("%s is not current (%v): go test ./protocol -run TestProtocolSchemaIsCurrent -update", schemaFile, err)
	}
}

// TestRecordedSessionsMatchTheSchema: every line each example client
// program sent in a real session (testdata/sessions/PROGRAM/STORY/
// client-N.jsonl: its hello, then its replies) is valid against the
// schema: the hello as a Hello, every other line as a Reply. Each program
// of examples/ has a session.
func TestRecordedSessionsMatchTheSchema(t *testing.T) {
	s := protocoltest.Load(t, schemaFile)
	files, err := filepath.Glob("testdata/sessions/*/*/client-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]int{}
	for _, file := range files {
		program := filepath.Base(filepath.Dir(filepath.Dir(file)))
		t.Run(strings.TrimPrefix(file, "testdata/sessions/"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 4<<20)
			n := 0
			for sc.Scan() {
				n++
				def := "Reply"
				if n == 1 {
					def = "Hello"
				}
				if err := s.Valid(def, sc.Bytes()); err != nil {
					t.Errorf("%s:%d: not a %s: %v", file, n, def, err)
				}
				// The harness reads the line the same way.
				if def == "Hello" {
					var h Hello
					if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.CheckVersion() != nil || h.CheckOwn() != nil {
						t.Errorf("%s:%d: the harness refuses this hello (%v, %v, %v)", file, n, err, h.CheckVersion(), h.CheckOwn())
					}
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n < 2 {
				t.Errorf("%s: %d lines; a session has a hello and replies", file, n)
			}
			programs[program] += n
		})
	}
	examples, err := filepath.Glob("../examples/*/client.*")
	if err != nil {
		t.Fatal(err)
	}
	examples = append(examples, "../examples/zookeeper-writelock/client")
	for _, e := range examples {
		name := filepath.Base(filepath.Dir(e))
		if programs[name] == 0 {
			t.Errorf("example %s has no recorded session in testdata/sessions/%s (testdata/sessions/record)", e, name)
		}
	}
}

// TestSchemaRefusesBrokenLines: the validator and the schema refuse a line
// that breaks the protocol, each one a recorded line with one thing
// broken, and take the line unbroken.
func TestSchemaRefusesBrokenLines(t *testing.T) {
	s := protocoltest.Load(t, schemaFile)
	hello := `{"protocol":2,"name":"x","locks":["redis",{"name":"my-lock","like":"redis","servers":"redis"}],"ops":["acquire","release","extend","write"],"storage_modes":["plain"],"fences":["postgres"],"watchdogs":["token"],"check_lease":true}`
	event := `{"id":2,"event":{"type":"ok","op":"acquire","key":"L","token":"a1","ttl":1000000000,"nodes":["A"],"lease_end":11432687099382,"fence":3,"t":11431702070798}}`
	write := `{"id":3,"event":{"type":"fail","op":"write","key":"L","token":"a1","read":0,"wrote":1,"reason":"fence","t":11431702070798}}`
	command := `{"id":1,"op":"init","init":{"lock":"redlock","config":{"redis":[{"name":"A","addr":"127.0.0.1:33315"}],"node_timeout":200000000,"client_id":2},"storage_mode":"plain","clock_file":"/tmp/c.clock"}}`
	for _, c := range []struct {
		def, line, from, to string
	}{
		{"Hello", hello, `"protocol":2`, `"protocol":"2"`},
		{"Hello", hello, `"protocol":2`, `"protocol":3`},
		{"Hello", hello, `"protocol":2,`, ``},
		{"Hello", hello, `"locks":["redis",`, `"locks":[7,`},
		{"Hello", hello, `"like":"redis",`, ``},
		{"Hello", hello, `"ops":["acquire"`, `"ops":["acquir"`},
		{"Hello", hello, `"storage_modes":["plain"]`, `"storage_modes":["plan"]`},
		{"Hello", hello, `"check_lease":true`, `"check_leases":true`},
		{"Reply", event, `"t":11431702070798`, `"t":11431702070798.5`},
		{"Reply", event, `"t":11431702070798`, `"t":"11431702070798"`},
		{"Reply", event, `,"t":11431702070798`, ``},
		{"Reply", event, `"type":"ok"`, `"type":"fault"`},
		{"Reply", event, `"op":"acquire"`, `"op":"lock"`},
		{"Reply", event, `"lease_end"`, `"lease_ends"`},
		{"Reply", event, `"nodes":["A"]`, `"nodes":"A"`},
		{"Reply", event, `"id":2,`, ``},
		{"Reply", event, `"key":"L",`, `"key":"L","target":"A",`},
		{"Reply", write, `"reason":"fence"`, `"reason":"fenced"`},
		{"Reply", write, `"read":0`, `"read":"0"`},
		{"Reply", `{"stall":{"from":1,"to":2}}`, `"to":2`, `"until":2`},
		{"Reply", `{"id":4,"done":true}`, `"done":true`, `"done":"yes"`},
		{"Command", command, `"op":"init"`, `"op":"lock"`},
		{"Command", command, `"storage_mode":"plain"`, `"storage_mode":"plane"`},
		{"Command", command, `"addr":"127.0.0.1:33315"`, `"address":"127.0.0.1:33315"`},
		{"Command", command, `"node_timeout":200000000`, `"node_timeout":"200ms"`},
	} {
		if !strings.Contains(c.line, c.from) {
			t.Fatalf("%s has no %s", c.line, c.from)
		}
		if err := s.Valid(c.def, []byte(c.line)); err != nil {
			t.Fatalf("the unbroken %s %s is refused: %v", c.def, c.line, err)
		}
		if err := s.Valid("", []byte(c.line)); err != nil {
			t.Fatalf("the unbroken %s %s is no protocol line: %v", c.def, c.line, err)
		}
		broken := strings.Replace(c.line, c.from, c.to, 1)
		if err := s.Valid(c.def, []byte(broken)); err == nil {
			t.Errorf("%s with %s for %s is valid; want refused: %s", c.def, c.to, c.from, broken)
		}
	}
}
