package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// TestClientCmd: client_cmd names a client program; a story no client
// program can play (a generator) is one error naming the file, line and
// field. What else the story needs is checked against the program's
// hello when it runs (TestClientProgramProblem): a story with writes
// loads.
func TestClientCmd(t *testing.T) {
	const head = "name: x\nlock: redlock\nexpected: safe\n"
	ok, err := Parse("ok.yaml", []byte(head+"client_cmd: [node, examples/node-redlock/client.js]\nsteps:\n  - do: acquire\n    client: 1\n  - do: extend\n    client: 1\n  - do: release\n    client: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ok.ClientCmd, []string{"node", "examples/node-redlock/client.js"}) {
		t.Fatalf("client_cmd %v", ok.ClientCmd)
	}
	if _, err := Parse("writes.yaml", []byte(head+"client_cmd: [node, c.js]\nstorage: plain\nsteps:\n  - do: acquire\n    client: 1\n  - do: write\n    client: 1\n")); err != nil {
		t.Fatalf("a story with writes and a client_cmd: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"client_cmd: []\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd: expected a program and its arguments"},
		{"client_cmd: ['']\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd: expected a program and its arguments"},
		{"client_cmd: node\nsteps:\n  - do: acquire\n    client: 1\n", "bad.yaml:4: client_cmd:"},
		{"client_cmd: [node, c.js]\nstorage: plain\ngenerator:\n  duration: 200ms\n  fault: pause\n  pause: 300ms\n",
			"bad.yaml:6: generator: a generator's loop runs inside the harness's own Go worker"},
	} {
		_, err := Parse("bad.yaml", []byte(head+c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line starting %q", c.yaml, err, c.want)
		}
	}
}

// TestClientProgramProblem: a story a client program's hello does not
// cover is refused with one line naming the file, the line and the field
// that asks for it, and what the hello lists; a v1 program covers no
// storage, fence, watchdog, lease check or client clock, whatever its
// line says; a v2 program that lists them plays the story.
func TestClientProgramProblem(t *testing.T) {
	sc, err := Parse("s.yaml", []byte(`name: s
lock: redis
expected: safe
storage: fenced
fence: postgres
watchdog: token
steps:
  - do: acquire
    client: 1
  - do: write
    client: 1
  - do: clock-jump
    client: 1
    by: -2s
  - do: renewal
    client: 1
    expect: ok
  - do: release
    client: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	all := ClientProgram{Program: "p", Protocol: 2, Locks: []string{"redis"}, Ops: []string{"acquire", "release", "extend", "write"},
		StorageModes: []string{"plain", "fenced"}, Fences: []string{"postgres"}, Watchdogs: []string{"token"}, CheckLease: true, ClientClock: true}
	if err := sc.ClientProgramProblem(&all); err != nil {
		t.Fatalf("a v2 program that covers the story: %v", err)
	}
	if err := sc.ClientProgramProblem(nil); err != nil {
		t.Fatalf("no program: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(p *ClientProgram)
		want string
	}{
		{"v1", func(p *ClientProgram) { p.Protocol = 1 }, "s.yaml:4: storage: the story needs writes to the protected storage in mode fenced, which the client program (p) does not cover (it speaks locksim worker protocol v1, which has acquire, release and extend only; storage_modes came with v2"},
		{"lock", func(p *ClientProgram) { p.Locks = []string{"redlock"} }, "s.yaml:2: lock: the story needs lock redis, which the client program (p) does not cover (its hello: locks [redlock]"},
		{"mode", func(p *ClientProgram) { p.StorageModes = []string{"plain"} }, "s.yaml:4: storage: the story needs writes to the protected storage in mode fenced, which the client program (p) does not cover (its hello: storage_modes [plain]"},
		{"fence", func(p *ClientProgram) { p.Fences = []string{"redis-incr"} }, "s.yaml:5: fence: the story needs fencing tokens from postgres"},
		{"watchdog", func(p *ClientProgram) { p.Watchdogs = nil }, "s.yaml:6: watchdog: the story needs the watchdog token, each renewal reported, which the client program (p) does not cover (its hello: watchdogs []"},
		{"write", func(p *ClientProgram) { p.Ops = []string{"acquire", "release"} }, "s.yaml:10: steps[1].do: the story needs the command write, which the client program (p) does not cover (its hello: ops [acquire release]"},
		{"clock", func(p *ClientProgram) { p.ClientClock = false }, "s.yaml:12: steps[2].do: the story jumps a client's wall clock, which the client program (p) does not let the harness move (its hello does not say client_clock: true"},
	} {
		p := all
		c.edit(&p)
		err := sc.ClientProgramProblem(&p)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line starting %q", c.name, err, c.want)
		}
	}
	check, err := Parse("c.yaml", []byte("name: c\nlock: redis\nexpected: safe\nstorage: plain\ncheck_lease: true\nsteps:\n  - do: acquire\n    client: 1\n  - do: write\n    client: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := all
	p.CheckLease = false
	if err := check.ClientProgramProblem(&p); err == nil || !strings.HasPrefix(err.Error(), "c.yaml:5: check_lease: the story needs the lease check before a write") {
		t.Errorf("check_lease: error %v", err)
	}
}
