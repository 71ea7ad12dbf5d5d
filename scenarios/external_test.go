package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// TestClientCmd: client_cmd names a client program; a story it cannot
// play (protocol v1 has acquire, release and extend only) is one error
// naming the file, line and field.
func TestClientCmd(t *testing.T) {
	const head = "name: x\nlock: redlock\nexpected: safe\n"
	ok, err := Parse("ok.yaml", []byte(head+"client_cmd: [node, examples/node-redlock/client.js]\nsteps:\n  - do: acquire\n    client: 1\n  - do: extend\n    client: 1\n  - do: release\n    client: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ok.ClientCmd, []string{"node", "examples/node-redlock/client.js"}) {
		t.Fatalf("client_cmd %v", ok.ClientCmd)
	}
	for _, c := range []struct{ yaml, want string }{
		{"client_cmd: []\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd: expected a program and its arguments"},
		{"client_cmd: ['']\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd: expected a program and its arguments"},
		{"client_cmd: node\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd:"},
		{"client_cmd: [node, c.js]\nstorage: plain\nsteps:\n  - do: acquire\n    client: 1\n  - do: write\n    client: 1\n",
			"bad.yaml:5: storage: the story writes to the protected storage (storage: plain), which only the harness's own Go worker does"},
		{"client_cmd: [node, c.js]\nwatchdog: token\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:5: watchdog:"},
		{"client_cmd: [node, c.js]\nsteps:\n  - do: acquire\n    client: 1\n  - do: clock-jump\n    client: 1\n    by: 1s\n",
			"bad.yaml:8: steps[1].do: a jump of a client's wall clock"},
	} {
		_, err := Parse("bad.yaml", []byte(head+c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line starting %q", c.yaml, err, c.want)
		}
	}
}
