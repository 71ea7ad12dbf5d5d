package scenarios

import (
	"strings"
	"testing"
)

// TestAcquireWait: an acquire that waits for the lock (wait:) loads only
// for a lock that waits; played with a lock that tries once it is n/a,
// saying why; a client program plays it only when its hello says
// acquire_wait.
func TestAcquireWait(t *testing.T) {
	story := func(lock, wait string) string {
		return "name: w\nlock: " + lock + "\nexpected: safe\nsteps:\n  - do: acquire\n    client: 1\n  - do: acquire\n    client: 2\n" + wait
	}
	sc, err := Parse("w.yaml", []byte(story("etcd", "    wait: 3s\n")))
	if err != nil {
		t.Fatalf("a waiting acquire of lock etcd: %v", err)
	}
	for _, c := range []struct{ lock, wait, want string }{
		{"postgres-xact", "    wait: 3s\n", "w.yaml:9: steps[1].wait: lock postgres-xact tries once"},
		{"etcd", "    wait: -1s\n", "w.yaml:9: steps[1].wait: a positive wait goes on an acquire only"},
	} {
		_, err := Parse("w.yaml", []byte(story(c.lock, c.wait)))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("lock %s, %q: error %v, want %q", c.lock, c.wait, err, c.want)
		}
	}
	if _, err := WithLock(sc, "etcd-lock-service"); err != nil {
		t.Errorf("with the Lock service, which waits: %v", err)
	}
	rl, err := Parse("r.yaml", []byte(story("redlock", "    wait: 3s\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WithLock(rl, "redsync"); err == nil || !strings.Contains(err.Error(), "lock redsync tries once") {
		t.Errorf("a waiting acquire played with redsync, which tries once: %v", err)
	}
	p := &ClientProgram{Program: "prog", Protocol: 2, Locks: []string{"etcd"}, Ops: []string{"acquire"}}
	if err := sc.ClientProgramProblem(p); err == nil || !strings.Contains(err.Error(), "acquire_wait") {
		t.Errorf("a program whose hello has no acquire_wait: %v", err)
	}
	p.AcquireWait = true
	if err := sc.ClientProgramProblem(p); err != nil {
		t.Errorf("a program whose hello says acquire_wait: %v", err)
	}
	p.Protocol = 1
	if err := sc.ClientProgramProblem(p); err == nil {
		t.Error("a v1 program plays a waiting acquire")
	}
	if why := NoReference(rl, "redsync"); !strings.Contains(why, "tries once") {
		t.Errorf("redsync as the reference of a waiting story: %q", why)
	}
	if why := NoReference(rl, "redlock"); why != "" {
		t.Errorf("redlock, which waits, as the reference: %q", why)
	}
}
