package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// nodeClient is the Node.js example client (examples/node-redlock) as a
// client_cmd, or a skip when node is not installed. Its packages must be
// installed: npm ci --prefix examples/node-redlock.
func nodeClient(t *testing.T) []string {
	t.Helper()
	return nodeExample(t, "node-redlock", "redlock")
}

// redisPyClient is the Python example client (examples/redis-py) as a
// client_cmd, or a skip when Debian's python3 is not installed. Its
// packages must be: apt-get install python3-redis python3-psycopg2.
func redisPyClient(t *testing.T) []string {
	t.Helper()
	return pyClient(t, "redis-py", "redis, psycopg2", "python3-redis and python3-psycopg2")
}

// playExternal plays a catalogue story with the clients run as argv, at
// most three times while the timing guard ends it unknown (the machine
// too slow to trust the story's timing; any verdict is final).
func playExternal(t *testing.T, name string, argv []string) *checker.Result {
	t.Helper()
	sc, err := scenarios.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	return playExternalScenario(t, sc, argv)
}

// playExternalScenario is playExternal of sc, a story or its
// counterfactual.
func playExternalScenario(t *testing.T, sc *scenarios.Scenario, argv []string) *checker.Result {
	t.Helper()
	return &playExternalOutcome(t, sc, argv).Check
}

// playExternalOutcome is playExternalScenario's whole outcome: the verdict and
// the history that earned it.
func playExternalOutcome(t *testing.T, sc *scenarios.Scenario, argv []string) *Outcome {
	t.Helper()
	name := sc.Name
	if sc.IsCounterfactual {
		name += " (counterfactual)"
	}
	var out *Outcome
	for attempt := 1; attempt <= 3; attempt++ {
		dir := filepath.Join(t.TempDir(), sc.Name)
		start := time.Now()
		var err error
		out, err = Run(context.Background(), sc, Options{Out: dir, ClientCmd: argv})
		if err != nil {
			t.Fatalf("%s with client_cmd %v: %v", name, argv, err)
		}
		t.Logf("%s: %s in %v (attempt %d): %s", name, out.Check.Verdict, time.Since(start).Round(time.Millisecond), attempt, out.Check.Summary)
		if out.Check.Verdict != checker.Unknown {
			checkClientProgramRan(t, out.Events, argv)
			break
		}
	}
	return out
}

// playFinding plays a client program's finding, examples/DIR/FILE: the
// story must end in want, its history must show the mechanism the story
// narrates (shows returns what it lacks, or ""), its counterfactual
// must end safe, and the reference lock the story names, played on the
// same story, must be safe, departing from the story at step depart
// (1-based): where the reference does what the program does not.
func playFinding(t *testing.T, file string, argv []string, want checker.Verdict, shows func([]history.Event) string, depart int) {
	t.Helper()
	sc := storyFile(t, file)
	out := playExternalOutcome(t, sc, argv)
	if out.Check.Verdict != want {
		t.Fatalf("%s: verdict %s, want %s: %s", sc.Name, out.Check.Verdict, want, out.Check.Summary)
	}
	if lacks := shows(out.Events); lacks != "" {
		t.Fatalf("%s: %s, but its history does not show the mechanism its story names: %s", sc.Name, want, lacks)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if res := playExternalScenario(t, cf, argv); res.Verdict != checker.Safe {
		t.Fatalf("its counterfactual (%s): verdict %s, want safe: %s", sc.Counterfactual.Change, res.Verdict, res.Summary)
	}
	ref := *sc
	ref.ClientCmd = nil
	o, err := Run(context.Background(), &ref, Options{Out: filepath.Join(t.TempDir(), "reference"), Departures: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.Check.Verdict != checker.Safe || o.Departed == nil || o.Departed.Step != depart {
		t.Fatalf("locksim's %s on the same story: verdict %s, departed %+v; want safe, departing from the story at step %d: %s",
			sc.Lock, o.Check.Verdict, o.Departed, depart, o.Check.Summary)
	}
}

// playExternalFlipped plays a catalogue story and then its
// counterfactual with the clients run as argv: the story must end as it
// expects, and the counterfactual flip. With lock, the story is played
// with that lock instead of its own (as sim run --lock does).
func playExternalFlipped(t *testing.T, name, lock string, argv []string) {
	t.Helper()
	sc, err := scenarios.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	if lock != "" {
		v, err := scenarios.WithLock(sc, lock)
		if err != nil {
			t.Fatal(err)
		}
		sc = v.Scenario
	}
	if res := playExternalScenario(t, sc, argv); res.Verdict != sc.Expected {
		t.Fatalf("%s with %v: verdict %s, want %s: %s", name, argv, res.Verdict, sc.Expected, res.Summary)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if res := playExternalScenario(t, cf, argv); res.Verdict != cf.Expected {
		t.Fatalf("%s's counterfactual (%s) with %v: verdict %s, want %s (the flip): %s", name, sc.Counterfactual.Change, argv, res.Verdict, cf.Expected, res.Summary)
	}
}

// libraryToken matches the tokens the example programs' libraries make:
// 32 hex digits (redlock's npm package and its fork, redis-py), a UUID
// (redis-semaphore's crypto.randomUUID()), 13 decimal digits
// (redis-lock's only token, the value it stores: the lease's end by
// Date.now(), in ms) or a decimal fraction (simple-redis-mutex's
// String(Math.random())) or 16 hex digits (etcd3's Lock, whose key is
// empty: its lease's ID, as etcdctl prints it), or tooz-memcached's, the
// coordinator's member id examples/tooz names (locksim-client-N); the Go
// worker's are 24 hex digits.
var libraryToken = regexp.MustCompile(`^([0-9a-f]{32}|[0-9a-f]{16}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9]{13}|0\.[0-9]+|locksim-client-[0-9]+)$`)

// checkClientProgramRan checks that the acquires were the client
// program's, by their tokens: the libraries' (libraryToken), or the
// ZooKeeper WriteLock client's znode, under its own root (the Go
// worker's are under /locksim/lock).
func checkClientProgramRan(t *testing.T, events []history.Event, argv []string) {
	t.Helper()
	p := argv[len(argv)-1]
	if strings.HasSuffix(p, writeLockClientPath) {
		for _, e := range events {
			if e.Op == history.OpAcquire && e.Type == history.Ok && !strings.HasPrefix(e.Token, writeLockRoot+"/") {
				t.Fatalf("acquire %+v: token %q is not a WriteLock znode under %s: did the client program run?", e, e.Token, writeLockRoot)
			}
		}
		return
	}
	if !strings.HasSuffix(p, "client.js") && !strings.HasSuffix(p, "client.py") {
		return
	}
	for _, e := range events {
		if e.Op == history.OpAcquire && e.Type == history.Ok && !libraryToken.MatchString(e.Token) {
			t.Fatalf("acquire %+v: token %q is not the library's (32 or 16 hex digits, a UUID, 13 digits, a fraction or a tooz member id): did the client program run?", e, e.Token)
		}
	}
}

// TestClientProgramNodeRedlock plays, on real servers, the Redlock
// stories that need no storage writes with every client the npm package
// redlock (examples/node-redlock, through locksim worker protocol v1):
// the same verdicts, every step's claim (granted by which nodes, refused
// for which reason) holding, as with the Go worker.
func TestClientProgramNodeRedlock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node and redis-server")
	}
	argv := nodeClient(t)
	for _, c := range []struct {
		name string
		want checker.Verdict
	}{
		{"redlock-clock-jump", checker.Unsafe},
		{"redlock-clock-jump-control", checker.Safe},
		{"redlock-crash-restart", checker.Unsafe},
		{"redlock-crash-restart-fsync", checker.Safe},
	} {
		t.Run(c.name, func(t *testing.T) {
			if res := playExternal(t, c.name, argv); res.Verdict != c.want {
				t.Fatalf("%s with the Node.js redlock client: verdict %s, want %s: %s", c.name, res.Verdict, c.want, res.Summary)
			}
		})
	}
}

// TestClientProgramNodeRedlockWrites plays, through protocol v2, stories
// with writes to the protected storage with every client the npm package
// redlock (examples/node-redlock; pg for the storage): a pause between
// read and write, the token check-and-set, per-node INCR fencing tokens,
// a wall clock stepped back under the lease check, and redlock's own
// auto-extension (using) as the watchdog; each story's counterfactual
// flips its verdict.
func TestClientProgramNodeRedlockWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeClient(t)
	for _, c := range []struct{ name, lock string }{
		{"redlock-pause-after-acquire", ""},
		{"redlock-token-cas", ""},
		{"redlock-incr-fence", ""},
		// The story's lock is the mutant redlock-wallclock, locksim's
		// Redlock timing its lease by the wall clock, as redlock does.
		{"redlock-client-clock-jump", "redlock"},
		{"redis-watchdog", ""},
	} {
		t.Run(c.name, func(t *testing.T) { playExternalFlipped(t, c.name, c.lock, argv) })
	}
}

// TestClientProgramRedisPy plays, through protocol v2, single-node Redis
// stories with writes with every client redis-py's Lock
// (examples/redis-py; psycopg2 for the storage): work that outlasts the
// TTL (its counterfactual renews with Lock.extend), a pause fenced by
// PostgreSQL tokens, and a pause that stops the Lock.extend watchdog; each
// story's counterfactual flips its verdict.
func TestClientProgramRedisPy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	argv := redisPyClient(t)
	for _, name := range []string{"redis-ttl-expiry", "fenced-pause", "redis-watchdog-pause"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
}

// TestClientProgramGoWorker: a client_cmd that is this binary (the test
// binary doubles as the Go worker) goes through the same path as any
// client program: hello, init, the story's verdict.
func TestClientProgramGoWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and client processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if res := playExternal(t, "redlock-clock-jump", []string{exe}); res.Verdict != checker.Unsafe {
		t.Fatalf("verdict %s, want unsafe: %s", res.Verdict, res.Summary)
	}
}

// TestClientProgramRefusedUpFront: a client program that cannot be run,
// that opens with no hello this harness speaks, or whose hello does not
// cover the story (protocol v1 has no writes; a v2 program that lacks a
// storage mode, the lock, a client clock) is one line of error, a harness
// error (exit 2), before any server starts: the harness reads the
// program's hello first (worker.Probe).
func TestClientProgramRefusedUpFront(t *testing.T) {
	jump, err := scenarios.Find("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	writes, err := scenarios.Find("redlock-pause-after-acquire")
	if err != nil {
		t.Fatal(err)
	}
	// A story without storage that jumps a client's wall clock.
	clientClock, err := scenarios.Parse("client-clock.yaml", []byte(`name: client-clock
lock: redlock
expected: safe
steps:
  - do: acquire
    client: 1
  - do: clock-jump
    client: 1
    by: -2s
  - do: release
    client: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	hello := func(line string) []string { return []string{"sh", "-c", "echo '" + line + "'; cat >/dev/null"} }
	v1 := hello(`{"protocol":1,"locks":["redlock"],"ops":["acquire","release","extend"]}`)
	v2 := hello(`{"protocol":2,"locks":["redlock"],"ops":["acquire","release","extend","write"],"storage_modes":["fenced"]}`)
	for _, c := range []struct {
		sc   *scenarios.Scenario
		argv []string
		want []string
	}{
		{jump, []string{"no-such-locksim-client"}, []string{`cannot run "no-such-locksim-client"`, "not found"}},
		{jump, []string{"/nonexistent/locksim/client"}, []string{`cannot run "/nonexistent/locksim/client"`, "no such file"}},
		{writes, v1, []string{"redlock-pause-after-acquire.yaml:", ": storage: the story needs writes to the protected storage in mode plain", "protocol v1", "acquire, release and extend only"}},
		{writes, v2, []string{": storage: the story needs writes to the protected storage in mode plain", "its hello: storage_modes [fenced]"}},
		{clientClock, v1, []string{"client-clock.yaml:7: steps[1].do: the story jumps a client's wall clock", "client_clock came with v2"}},
		{clientClock, v2, []string{"client-clock.yaml:7: steps[1].do: the story jumps a client's wall clock", "does not say client_clock: true"}},
		{jump, hello(`{"protocol":3,"locks":["redlock"],"ops":["acquire","release"]}`), []string{"client program (sh -c", "speaks locksim worker protocol v3; this harness speaks v1 to v2"}},
		{jump, hello(`{"protocol":1,"locks":["redis"],"ops":["acquire","release"]}`), []string{"redlock-clock-jump.yaml:", ": lock: the story needs lock redlock", "its hello: locks [redis]"}},
		{jump, hello(`{"protocol":1,"locks":["redlock"],"ops":["acquire"]}`), []string{": steps[7].do: the story needs the command release", "its hello: ops [acquire]"}},
		{jump, []string{"sh", "-c", `echo 'Error: no such module' >&2; exit 3`}, []string{"client program (sh -c", "exited (exit status 3) before printing its hello line; its stderr says: Error: no such module"}},
		{jump, []string{"sh", "-c", `echo hello; cat >/dev/null`}, []string{"client program (sh -c", "its first line is not a hello line"}},
	} {
		start := time.Now()
		_, err := Run(context.Background(), c.sc, Options{Out: t.TempDir(), ClientCmd: c.argv})
		var he *HarnessError
		if !errors.As(err, &he) {
			t.Fatalf("%s with %v: error %v, want a harness error", c.sc.Name, c.argv, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s with %v: error of more than one line:\n%s", c.sc.Name, c.argv, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s with %v: error %q does not say %q", c.sc.Name, c.argv, msg, w)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s with %v: refused after %v: the servers were started first?", c.sc.Name, c.argv, d)
		}
	}
}

// TestNodeHrtimeIsMonotonic: Node's process.hrtime.bigint(), which the
// Node.js client stamps its events with, reads CLOCK_MONOTONIC in
// nanoseconds, the harness's clock: a reading taken by a node process
// falls between two of the harness's taken around it.
func TestNodeHrtimeIsMonotonic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missingProgram(t, "node is not installed", err)
	}
	before := history.Monotonic()
	out, err := exec.Command(node, "-e", "process.stdout.write(process.hrtime.bigint().toString())").Output()
	after := history.Monotonic()
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(string(out), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if v < before || v > after {
		t.Fatalf("node's hrtime %d is not between the harness's CLOCK_MONOTONIC readings %d and %d", v, before, after)
	}
}
