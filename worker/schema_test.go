// schema_test.go checks that the Go worker, the protocol's reference
// implementation, speaks docs/protocol.schema.json (generated and checked
// against recorded sessions in package protocol).

package worker

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/protocol/protocoltest"
)

// TestGoWorkerLinesMatchTheSchema: the harness's own worker, the
// reference implementation, speaks the schema too: its hello, and the
// commands and replies of a session with it.
func TestGoWorkerLinesMatchTheSchema(t *testing.T) {
	s := protocoltest.Load(t, "../docs/protocol.schema.json")
	var out bytes.Buffer
	if err := writeHello(&out); err != nil {
		t.Fatal(err)
	}
	if err := s.Valid("Hello", bytes.TrimSpace(out.Bytes())); err != nil {
		t.Fatalf("the Go worker's hello %s: %v", out.String(), err)
	}
	cmds := []protocol.Command{
		{ID: 1, Op: "init", Init: &protocol.Init{Lock: "test-mem", Config: clients.Config{Servers: map[clients.Backend][]clients.Node{"redis": {{Name: "A", Addr: "127.0.0.1:1"}}}}}},
		{ID: 2, Op: history.OpAcquire, Key: "L", TTL: 1e9},
		{ID: 3, Op: history.OpExtend, Key: "L", TTL: 1e9},
		{ID: 4, Op: history.OpRelease, Key: "L"},
		{ID: 5, Op: history.OpRelease, Key: "L"},
	}
	var in bytes.Buffer
	for _, c := range cmds {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Valid("Command", b); err != nil {
			t.Errorf("command %s: %v", b, err)
		}
		in.Write(append(b, '\n'))
	}
	var wire bytes.Buffer
	Serve(&in, &wire)
	replies := bytes.Split(bytes.TrimSpace(wire.Bytes()), []byte("\n"))
	if len(replies) < 2*len(cmds) {
		t.Fatalf("%d replies to %d commands: %s", len(replies), len(cmds), wire.String())
	}
	for _, b := range replies {
		if err := s.Valid("Reply", b); err != nil {
			t.Errorf("reply %s: %v", b, err)
		}
	}
}
