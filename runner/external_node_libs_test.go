package runner

// Real-server tests of the Node.js example programs over other lock
// libraries than node-redlock: examples/redis-semaphore (redis-semaphore's
// Mutex and RedlockMutex) and examples/sesamecare-redlock
// (@sesamecare-oss/redlock, the maintained fork of redlock). Each plays
// catalogue stories of its servers through locksim worker protocol v2,
// each story with its counterfactual flipped.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeExample is examples/<name>/client.js run by node as a client_cmd,
// or a skip when node is not installed. Its packages must be installed
// (pkg is one of them): npm ci --prefix examples/<name> (make test-deps).
func nodeExample(t *testing.T, name, pkg string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingProgram(t, "node is not installed: the Node.js client (examples/"+name+") cannot run here", err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
		t.Fatalf("examples/%s has no packages installed: run `npm ci --prefix examples/%s` (%v)", name, name, err)
	}
	return []string{node, filepath.Join(dir, "client.js")}
}

// TestClientProgramRedisSemaphore plays stories with every client
// redis-semaphore 5.8 (examples/redis-semaphore; pg for the storage). With
// lock redis (its Mutex, one node): work that outlasts the TTL (the
// counterfactual turns on the library's refresh, which checks the
// identifier), a pause fenced by PostgreSQL tokens, and a pause that
// stops the refresh with the process. With lock redlock (its
// RedlockMutex, five nodes): a jump of a node's clock, a pause after the
// acquire, and a node that restarts without its keys.
func TestClientProgramRedisSemaphore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeExample(t, "redis-semaphore", "redis-semaphore")
	for _, name := range []string{
		"redis-ttl-expiry", "fenced-pause", "redis-watchdog-pause",
		"redlock-clock-jump", "redlock-pause-after-acquire", "redlock-crash-restart",
	} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
}

// TestClientProgramSesamecareRedlock plays stories with every client
// @sesamecare-oss/redlock 1.4 (examples/sesamecare-redlock; pg for the
// storage): a pause after the acquire, a node that restarts without its
// keys, the client's wall clock stepped back under the lease check (the
// story's lock is the mutant redlock-wallclock, locksim's Redlock timing
// its lease by the wall clock, as the library does), and, on one node
// (lock redis), the library's auto-extension (using) as the watchdog.
func TestClientProgramSesamecareRedlock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeExample(t, "sesamecare-redlock", "@sesamecare-oss/redlock")
	for _, c := range []struct{ name, lock string }{
		{"redlock-pause-after-acquire", ""},
		{"redlock-crash-restart", ""},
		{"redlock-client-clock-jump", "redlock"},
		{"redis-watchdog", ""},
	} {
		t.Run(c.name, func(t *testing.T) { playExternalFlipped(t, c.name, c.lock, argv) })
	}
}
