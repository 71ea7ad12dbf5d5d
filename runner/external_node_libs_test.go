package runner

// Real-server tests of the Node.js example programs over other lock
// libraries than node-redlock: examples/redis-semaphore (redis-semaphore's
// Mutex and RedlockMutex), examples/sesamecare-redlock
// (@sesamecare-oss/redlock, the maintained fork of redlock),
// examples/node-redlock4 (redlock 4.2.0, the version of its latest tag),
// examples/redis-lock (redis-lock 1.0.0, a lock with no token),
// examples/simple-redis-mutex (simple-redis-mutex 3.0.0) and
// examples/node-etcd3 (etcd3 1.1.2's Lock, on etcd). Each
// plays catalogue stories of its servers through locksim worker protocol
// v2, each story with its counterfactual flipped, or judged against its
// reference on the same story.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
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

// playAgainstReference plays a catalogue story with the clients run as
// argv (with lock, when set, in place of the story's own, as sim run
// --lock does) and the same story with the lock they are judged against
// (scenarios.ReferenceFor), played by the harness's own worker, as sim
// run --client-cmd does: at most three times while either ends unknown.
// The outcome is the program's run, its Reference the comparison.
func playAgainstReference(t *testing.T, sc *scenarios.Scenario, lock string, argv []string) *Outcome {
	t.Helper()
	if lock != "" {
		v, err := scenarios.WithLock(sc, lock)
		if err != nil {
			t.Fatal(err)
		}
		sc = v.Scenario
	}
	ref, err := scenarios.Resolve(sc, scenarios.Changes{Lock: scenarios.ReferenceFor(sc, sc.Lock, true), Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	var out *Outcome
	for attempt := 1; attempt <= 3; attempt++ {
		start := time.Now()
		out, err = Run(context.Background(), sc, Options{Out: filepath.Join(t.TempDir(), sc.Name), ClientCmd: argv, Reference: ref.Scenario, Departures: true})
		if err != nil {
			t.Fatalf("%s with client_cmd %v: %v", sc.Name, argv, err)
		}
		t.Logf("%s: %s, the reference %s: %s in %v (attempt %d): %s", sc.Name, out.Check.Verdict, out.Reference.Lock, out.Reference.Verdict,
			time.Since(start).Round(time.Millisecond), attempt, out.Reference.Sentence(out))
		if out.Check.Verdict != checker.Unknown && out.Reference.Verdict != checker.Unknown {
			checkClientProgramRan(t, out.Events, argv)
			break
		}
	}
	return out
}

// TestClientProgramNodeRedlock4 plays stories with every client redlock
// 4.2.0 (examples/node-redlock4; pg for the storage), the version most
// Node.js code runs. Three flip with their counterfactuals: a pause after
// the acquire, a node that restarts without its keys, and the client's
// wall clock stepped back under the lease check (the story's lock is the
// mutant redlock-wallclock, locksim's Redlock timing its lease by the wall
// clock, as redlock does). On redlock-pause-during-acquire, where redlock
// 5.0.0-beta.2 grants a lease whose validity already ran out
// (docs/findings.md), redlock 4.2.0 refuses it as the reference does:
// its acquire resolves only if the lock's expiration is still ahead of
// Date.now() once every node has answered (redlock.js line 419), so the
// step plays as told, refused for validity with all five nodes granting.
func TestClientProgramNodeRedlock4(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeExample(t, "node-redlock4", "redlock")
	for _, c := range []struct{ name, lock string }{
		{"redlock-pause-after-acquire", ""},
		{"redlock-crash-restart", ""},
		{"redlock-client-clock-jump", "redlock"},
	} {
		t.Run(c.name, func(t *testing.T) { playExternalFlipped(t, c.name, c.lock, argv) })
	}
	t.Run("redlock-pause-during-acquire", func(t *testing.T) {
		sc, err := scenarios.Find("redlock-pause-during-acquire")
		if err != nil {
			t.Fatal(err)
		}
		out := playAgainstReference(t, sc, "", argv)
		if out.Check.Verdict != checker.Safe || out.Reference.Verdict != checker.Safe {
			t.Fatalf("verdict %s, the reference %s; want both safe: %s", out.Check.Verdict, out.Reference.Verdict, out.Reference.Sentence(out))
		}
		if out.Departed != nil {
			t.Fatalf("redlock 4.2.0 did not refuse the late grant as told: %s", out.Departed)
		}
	})
}

// TestClientProgramRedisLock plays stories with every client redis-lock
// 1.0.0 (examples/redis-lock), whose key holds no token, only the lease's
// end by the taker's Date.now(), and whose release deletes the key if
// Date.now() is before that end (index.js lines 41-45). On
// redis-late-release client 1 releases in time, the request arrives after
// the TTL, and its DEL deletes client 2's key: unsafe, where the
// reference redis (its release checks the token) is safe; without the
// delay (the story's latency step taken out) the DEL lands before the
// TTL and redis-lock is safe too. Both are played without the story's
// claims on client 1's release and client 3's acquire, which hold for the
// reference only: a run that departs from its story is unknown on a busy
// machine. fenced-redis-incr-crash flips with its counterfactual.
func TestClientProgramRedisLock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeExample(t, "redis-lock", "redis-lock")
	t.Run("fenced-redis-incr-crash", func(t *testing.T) { playExternalFlipped(t, "fenced-redis-incr-crash", "", argv) })
	t.Run("redis-late-release", func(t *testing.T) {
		out := playAgainstReference(t, lateRelease(t, true), "", argv)
		if out.Check.Verdict != checker.Unsafe || out.Reference.Verdict != checker.Safe {
			t.Fatalf("verdict %s, the reference %s; want unsafe where the reference is safe: %s", out.Check.Verdict, out.Reference.Verdict, out.Reference.Sentence(out))
		}
	})
	t.Run("redis-late-release without the delay", func(t *testing.T) {
		if out := playAgainstReference(t, lateRelease(t, false), "", argv); out.Check.Verdict != checker.Safe || out.Reference.Verdict != checker.Safe {
			t.Fatalf("without the delay: verdict %s, the reference %s; want both safe: %s", out.Check.Verdict, out.Reference.Verdict, out.Reference.Sentence(out))
		}
	})
}

// lateRelease is scenarios/redis-late-release.yaml without the claims on
// client 1's release and client 3's acquire, and, unless delay, without
// its latency step.
func lateRelease(t *testing.T, delay bool) *scenarios.Scenario {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "scenarios", "redis-late-release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	story := string(text)
	cuts := []string{"    expect: refused\n    reason: not-held\n", "    expect: refused\n    reason: held\n"}
	if !delay {
		cuts = append(cuts, "  - do: latency\n    client: 1\n    links: [A]\n    delay: 1500ms\n    stream: upstream\n    say: Client 1's requests to the node are held 1.5s in the network.\n")
	}
	for _, cut := range cuts {
		if strings.Count(story, cut) != 1 {
			t.Fatalf("scenarios/redis-late-release.yaml: expected %q once", cut)
		}
		story = strings.Replace(story, cut, "", 1)
	}
	sc, err := scenarios.Parse("redis-late-release.yaml", []byte(story))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestClientProgramSimpleRedisMutex plays stories with every client
// simple-redis-mutex 3.0.0 (examples/simple-redis-mutex), whose release
// is a token-checked script and whose fencing token is an INCR of its own
// counter on the node (the fence redis-incr), each with its
// counterfactual: the token node restarting empty hands out a token
// again (fenced-redis-incr-crash, unsafe; without the crash, safe), and a
// pause past the TTL fenced by PostgreSQL tokens (fenced-pause).
func TestClientProgramSimpleRedisMutex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, redis-server and PostgreSQL")
	}
	argv := nodeExample(t, "simple-redis-mutex", "simple-redis-mutex")
	for _, name := range []string{"fenced-redis-incr-crash", "fenced-pause"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
}

// TestClientProgramNodeEtcd3 plays, on a real etcd and PostgreSQL, etcd
// stories with every client the npm package etcd3 1.1.2's Lock
// (examples/node-etcd3), its own lock node-etcd3 like etcd, each with its
// counterfactual flipped: a holder paused past its lease (etcd-pause), cut
// off from etcd while it works (etcd-partition: without the partition the
// library's keepalive holds the 2 s lease through 4 s of work, so the
// counterfactual is safe), and the pause again with the key's create
// revision as the fencing token (etcd-pause-fenced).
func TestClientProgramNodeEtcd3(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node, etcd and PostgreSQL")
	}
	argv := nodeExample(t, "node-etcd3", "etcd3")
	for _, name := range []string{"etcd-pause", "etcd-partition", "etcd-pause-fenced"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
}

// TestClientCmdKeepsTheCounterfactualsChange: a story whose counterfactual
// changes the client program (to the harness's own worker) keeps that
// change when the run's ClientCmd (sim run --client-cmd) names a program:
// the story is played by the program (its library's tokens), the
// counterfactual by the Go worker (none of the library's tokens), and the
// verdict flips. It once did not: the flag's program played both, and sim
// findings --report wrote that the verdict did not flip.
func TestClientCmdKeepsTheCounterfactualsChange(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node and redis-server")
	}
	argv := nodeExample(t, "node-redlock4", "redlock")
	sc := storyFile(t, filepath.Join("testdata", "client-cmd-counterfactual.yaml"))
	out, err := Run(context.Background(), sc, Options{Out: t.TempDir(), ClientCmd: argv, Counterfactual: true})
	if err != nil {
		t.Fatal(err)
	}
	checkClientProgramRan(t, out.Events, argv)
	cf := out.Counterfactual
	if cf == nil || cf.Run == nil {
		t.Fatal("no counterfactual was played")
	}
	granted := 0
	for _, e := range cf.Run.Events {
		if e.Op == history.OpAcquire && e.Type == history.Ok {
			granted++
			if libraryToken.MatchString(e.Token) {
				t.Fatalf("the counterfactual's acquire %+v has the library's token %q: the client program played the counterfactual, which changes it to the harness's own worker", e, e.Token)
			}
		}
	}
	if granted == 0 {
		t.Fatalf("the counterfactual granted nothing: %s", cf.Summary)
	}
	t.Logf("story: %s; counterfactual (%s): %s", out.Check.Summary, cf.Change, cf.Summary)
	if out.Check.Verdict != checker.Unknown && cf.Verdict != checker.Unknown && (out.Check.Verdict != checker.Unsafe || !cf.Flipped) {
		t.Errorf("story %s, counterfactual %s (flipped %v): want unsafe, then safe", out.Check.Verdict, cf.Verdict, cf.Flipped)
	}
}
