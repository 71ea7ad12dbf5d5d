package runner

// Real-server tests of the Python client programs over two more libraries
// (examples/kazoo: Kazoo's Lock recipe on ZooKeeper; examples/python-etcd3:
// python-etcd3's Lock on etcd), each a client of locksim worker protocol
// v2 run by Debian's python3, as examples/redis-py is.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// storyFile loads the story in path (an example's own story, a test's).
func storyFile(t *testing.T, path string) *scenarios.Scenario {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Parse(path, text)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// pyClient is the example client examples/<example>/client.py as a
// client_cmd, or a skip when Debian's python3 is missing; the Debian
// packages it imports (pkgs) must be installed (make test-deps).
func pyClient(t *testing.T, example, imports, pkgs string) []string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		missingProgram(t, "/usr/bin/python3 is not installed: the Python client (examples/"+example+") cannot run here", err)
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import "+imports).CombinedOutput(); err != nil {
		t.Fatalf("examples/%s needs Debian's %s (make test-deps): %v: %s", example, pkgs, err, out)
	}
	path, err := filepath.Abs(filepath.Join("..", "examples", example, "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{path}
}

// TestClientProgramKazoo plays, on a real ZooKeeper and PostgreSQL, three
// ZooKeeper stories with writes with every client Kazoo's Lock recipe
// (examples/kazoo), each with its counterfactual: the pause and the
// partition past the session timeout (unsafe: the recipe believes it
// holds the lock until it releases it), and the pause fenced by the
// znode's czxid (safe).
func TestClientProgramKazoo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, ZooKeeper and PostgreSQL")
	}
	argv := pyClient(t, "kazoo", "kazoo, psycopg2", "python3-kazoo and python3-psycopg2")
	for _, name := range []string{"zookeeper-pause", "zookeeper-pause-fenced", "zookeeper-partition"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
}

// TestClientProgramPythonEtcd3 plays, on a real etcd 3.4 and PostgreSQL,
// etcd stories with every client python-etcd3's Lock
// (examples/python-etcd3). etcd-pause and etcd-pause-fenced flip as
// locksim's own etcd lock does. etcd-partition's counterfactual (no
// partition) does not: python-etcd3's Lock keeps no keepalive on its
// lease, so client 1, working 4s on a 2s lease, loses the lock with no
// fault at all and its write is a lost update. The test holds that
// finding: the counterfactual ends unsafe.
func TestClientProgramPythonEtcd3(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, etcd and PostgreSQL")
	}
	argv := pyClient(t, "python-etcd3", "etcd3, psycopg2", "python3-etcd3 and python3-psycopg2")
	for _, name := range []string{"etcd-pause", "etcd-pause-fenced"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
	t.Run("etcd-partition", func(t *testing.T) {
		sc, err := scenarios.Find("etcd-partition")
		if err != nil {
			t.Fatal(err)
		}
		if res := playExternalScenario(t, sc, argv); res.Verdict != checker.Unsafe {
			t.Fatalf("etcd-partition: verdict %s, want unsafe: %s", res.Verdict, res.Summary)
		}
		cf, err := sc.CounterfactualScenario()
		if err != nil {
			t.Fatal(err)
		}
		// No keepalive: the lease lapses 2s after the grant, partition or not.
		if res := playExternalScenario(t, cf, argv); res.Verdict != checker.Unsafe {
			t.Fatalf("etcd-partition's counterfactual (%s): verdict %s, want unsafe (python-etcd3's lease lapses without a keepalive): %s",
				sc.Counterfactual.Change, res.Verdict, res.Summary)
		}
	})
}

// TestClientProgramPortalocker plays stories with every client
// portalocker 2.2.1's RedisLock (examples/portalocker), a lock of its own
// like redis that is a subscription of the holder's connection, with no
// key and no TTL, each with its counterfactual flipped: the failover
// (redis-failover: the promoted replica has no subscriber, so client 2 is
// granted while client 1 holds), a waiter pinging a paused holder for 2s
// past the library's 1s unavailable timeout (unanswered-ping: safe, the
// waiter never kills the holder's connection; its counterfactual resets
// that connection: unsafe), and a restart of the server while the holder
// is paused (restart-paused: unsafe; without the restart, safe).
func TestClientProgramPortalocker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3 and redis-server")
	}
	argv := pyClient(t, "portalocker", "portalocker.redis, psycopg2", "python3-portalocker and python3-psycopg2")
	t.Run("redis-failover", func(t *testing.T) { playExternalFlipped(t, "redis-failover", "", argv) })
	for _, file := range []string{"unanswered-ping.yaml", "restart-paused.yaml"} {
		t.Run(file, func(t *testing.T) {
			sc := storyFile(t, filepath.Join("..", "examples", "portalocker", file))
			if res := playExternalScenario(t, sc, argv); res.Verdict != sc.Expected {
				t.Fatalf("%s: verdict %s, want %s: %s", file, res.Verdict, sc.Expected, res.Summary)
			}
			cf, err := sc.CounterfactualScenario()
			if err != nil {
				t.Fatal(err)
			}
			if res := playExternalScenario(t, cf, argv); res.Verdict != cf.Expected {
				t.Fatalf("%s's counterfactual (%s): verdict %s, want %s (the flip): %s", file, sc.Counterfactual.Change, res.Verdict, cf.Expected, res.Summary)
			}
		})
	}
}

// TestClientProgramTooz plays stories with every client OpenStack's tooz
// 3.1.0 (examples/tooz), one program with a lock per driver, each story
// with its counterfactual flipped: on Redis (tooz-redis, like redis) the
// failover, unsafe and safe, on PostgreSQL (tooz-pgsql, like
// postgres-session) the dropped connection and the partition that leaks
// the lock, on etcd (tooz-etcd3, like etcd) the pause, bare and fenced,
// on ZooKeeper (tooz-zookeeper, like zookeeper) the partition past the
// session (zookeeper-pause departs from its story: tooz's release after
// the expiry answers True, as Kazoo swallows the znode already gone).
// Then tooz's four findings: its etcd3 heartbeat says it renewed a lease
// etcd answered is gone (examples/tooz/etcd3-heartbeat-expired.yaml:
// unsafe; with locksim's etcd lock, safe), its memcached heartbeat
// touches a key another client now holds (memcached-heartbeat-touch.yaml)
// and its memcached release, a get then a delete, deletes the next
// holder's key when the get's answer comes late
// (memcached-release-race.yaml: each unsafe; with locksim's memcached
// lock, safe), and its PostgresLock leaves
// its lock's transaction open, so idle_in_transaction_session_timeout
// ends the lock's session and client 2 is granted
// (examples/tooz/idle-in-transaction.yaml: unsafe; without the setting,
// safe), where locksim's postgres-session, played on the same story by
// the harness's own worker, is refused.
func TestClientProgramTooz(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server, etcd, memcached, ZooKeeper and PostgreSQL")
	}
	argv := pyClient(t, "tooz", "tooz.coordination, pymemcache, kazoo, psycopg2", "python3-tooz, python3-pymemcache, python3-kazoo and python3-psycopg2")
	for _, name := range []string{"redis-failover", "redis-failover-efficiency", "postgres-connection-drop", "postgres-partition-leak",
		"etcd-pause", "etcd-pause-fenced", "zookeeper-partition"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
	// tooz-etcd3's heartbeat says it renewed a lease etcd answered is
	// gone, tooz-memcached's touches the key another client now holds, and
	// tooz-memcached's release deletes a key that became another's between
	// its get and its delete: unsafe; each counterfactual plays locksim's
	// lock of those servers, whose renewal or release is refused: safe.
	for _, file := range []string{"etcd3-heartbeat-expired.yaml", "memcached-heartbeat-touch.yaml", "memcached-release-race.yaml"} {
		t.Run(file, func(t *testing.T) {
			shows := func([]history.Event) string { return "" }
			if file == "etcd3-heartbeat-expired.yaml" {
				shows = renewedGoneLease
			}
			playUnsafeAgainstReference(t, filepath.Join("..", "examples", "tooz", file), argv, shows)
		})
	}
	// tooz-zookeeper's refused try, its cleanup's delete lost to a reset
	// connection, leaves its contender znode on the coordinator's live
	// session (kazoo#760): client 3 is refused by a lock no client holds,
	// leaked; without the reset, granted: safe. locksim's zookeeper lock,
	// which closes a refused try's session, grants client 3 on the same
	// story.
	t.Run("zookeeper-orphan-contender.yaml", func(t *testing.T) {
		playFinding(t, filepath.Join("..", "examples", "tooz", "zookeeper-orphan-contender.yaml"), argv, checker.Leaked, orphanContender, 13)
	})
	t.Run("idle-in-transaction.yaml", func(t *testing.T) {
		playFinding(t, filepath.Join("..", "examples", "tooz", "idle-in-transaction.yaml"), argv, checker.Unsafe, idleSessionEnded, 4)
	})
}

// orphanContender is what tooz-zookeeper-orphan-contender's history must
// show: client 3's acquire refused (held) after client 1 released, with
// client 2's contender znode the one in line, and client 2 holding
// nothing (both its tries refused).
func orphanContender(events []history.Event) string {
	released, refused := false, false
	for _, e := range events {
		switch {
		case e.Process == 2 && e.Op == "acquire" && e.Type == history.Ok:
			return "client 2 was granted the lock"
		case e.Process == 1 && e.Op == "release" && e.Type == history.Ok:
			released = true
		case e.Process == 3 && e.Op == "acquire" && e.Type == history.Fail && released:
			if e.Reason != "held" || !strings.Contains(e.Detail, "contenders in line: ") || !strings.Contains(e.Detail, "(locksim-client-2)") ||
				strings.Contains(e.Detail, "(locksim-client-1)") {
				return fmt.Sprintf("client 3's refusal (%s) does not name client 2's contender alone in line: %s", e.Reason, e.Detail)
			}
			refused = true
		}
	}
	if !refused {
		return "client 3 was not refused after client 1 released"
	}
	return ""
}

// idleSessionEnded is what tooz-pgsql's idle-in-transaction story must
// show: client 2 granted before client 1 released, and client 1's
// release finding its connection closed by the server (PostgreSQL ends
// the session for its idle transaction; no fault touches it).
func idleSessionEnded(events []history.Event) string {
	granted := false
	for _, e := range events {
		switch {
		case e.Process == 2 && e.Op == "acquire" && e.Type == history.Ok:
			granted = true
		case e.Process == 1 && e.Op == "release" && e.Type != history.Invoke:
			if !granted {
				return "client 1 released before client 2 was granted"
			}
			if !strings.Contains(e.Detail, "server closed the connection") {
				return "client 1's release does not find its session ended by the server: " + e.Detail
			}
			return ""
		}
	}
	return "client 1's release has no outcome"
}

// TestClientProgramToozEtcd3gw plays tooz's etcd3gw driver
// (examples/tooz-etcd3gw: examples/tooz's program offering tooz-etcd3gw
// alone, like etcd) on a real etcd: the pause and the partition past the
// lease (unsafe; without the fault, safe) and the pause fenced by the
// key's create revision (safe; unfenced, unsafe), each with its
// counterfactual flipped. Then its finding: its heartbeat says it renewed
// a lease etcd's gateway answered is gone (heartbeat-expired.yaml:
// unsafe, client 1's renewal granted with etcd's keepalive answering no
// TTL, -1 in etcd3gw's words); the counterfactual, locksim's etcd lock,
// is refused at the renewal: safe.
func TestClientProgramToozEtcd3gw(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, etcd and PostgreSQL")
	}
	argv := pyClient(t, "tooz-etcd3gw", "tooz.coordination, etcd3gw, psycopg2", "python3-tooz, python3-etcd3gw and python3-psycopg2")
	// etcd-partition is left out as for tooz-etcd3: with no heart, the
	// lease lapses under the work, and its counterfactual is unsafe too.
	for _, name := range []string{"etcd-pause", "etcd-pause-fenced"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
	t.Run("heartbeat-expired.yaml", func(t *testing.T) {
		playUnsafeAgainstReference(t, filepath.Join("..", "examples", "tooz-etcd3gw", "heartbeat-expired.yaml"), argv, renewedGoneLease)
	})
	t.Run("timeout-ignored.yaml", func(t *testing.T) {
		sc := storyFile(t, filepath.Join("..", "examples", "tooz-etcd3gw", "timeout-ignored.yaml"))
		out := playExternalOutcome(t, sc, argv)
		if out.Check.Verdict != checker.Hung {
			t.Fatalf("%s: verdict %s, want hung: %s", sc.Name, out.Check.Verdict, out.Check.Summary)
		}
		if lacks := acquireOfClient2(out.Events, "note", "never returned"); lacks != "" {
			t.Fatalf("%s: hung, but its history does not show client 2's acquire hung: %s", sc.Name, lacks)
		}
		// The counterfactual's one change is an argument of the program:
		// etcd3gw 2.4.0's fix, the timeout passed to each request.
		cf, err := sc.CounterfactualScenario()
		if err != nil {
			t.Fatal(err)
		}
		fixed := append(append([]string{}, argv...), "--etcd3gw-timeout-per-request")
		o := playExternalOutcome(t, cf, fixed)
		if o.Check.Verdict != checker.Safe {
			t.Fatalf("its counterfactual (%s): verdict %s, want safe: %s", sc.Counterfactual.Change, o.Check.Verdict, o.Check.Summary)
		}
		if lacks := acquireOfClient2(o.Events, "info", "ConnectionTimeoutError"); lacks != "" {
			t.Fatalf("its counterfactual: client 2's acquire did not time out: %s", lacks)
		}
	})
}

// acquireOfClient2 finds client 2's acquire ending in an event of type
// typ whose detail holds want (a hung call is the harness's note); it
// returns what it found instead, or "".
func acquireOfClient2(events []history.Event, typ, want string) string {
	for _, e := range events {
		if e.Process != 2 || e.Type == history.Invoke {
			continue
		}
		if e.Op == "acquire" || e.Op == "hung" {
			if string(e.Type) != typ || !strings.Contains(e.Detail, want) {
				return fmt.Sprintf("client 2's acquire ended %s: %s", e.Type, e.Detail)
			}
			return ""
		}
	}
	return "client 2's acquire never ended in the history"
}

// playUnsafeAgainstReference plays a client program's finding whose
// counterfactual is the reference lock played by the harness's own
// worker: the story must end unsafe, its history show what shows looks
// for (shows returns what it lacks, or ""), and the counterfactual end
// safe.
func playUnsafeAgainstReference(t *testing.T, file string, argv []string, shows func([]history.Event) string) {
	t.Helper()
	sc := storyFile(t, file)
	out := playExternalOutcome(t, sc, argv)
	if out.Check.Verdict != checker.Unsafe {
		t.Fatalf("%s: verdict %s, want unsafe: %s", sc.Name, out.Check.Verdict, out.Check.Summary)
	}
	if lacks := shows(out.Events); lacks != "" {
		t.Fatalf("%s: unsafe, but its history does not show the mechanism its story names: %s", sc.Name, lacks)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), cf, Options{Out: filepath.Join(t.TempDir(), "cf")})
	if err != nil {
		t.Fatal(err)
	}
	if o.Check.Verdict != checker.Safe {
		t.Fatalf("its counterfactual (%s): verdict %s, want safe: %s", sc.Counterfactual.Change, o.Check.Verdict, o.Check.Summary)
	}
}

// renewedGoneLease is what a heartbeat-expired story's history must
// show: client 1's extend granted (tooz said it renewed) with etcd's
// keepalive answering that the lease is gone.
func renewedGoneLease(events []history.Event) string {
	for _, e := range events {
		if e.Process == 1 && e.Op == "extend" && e.Type != history.Invoke {
			if e.Type != history.Ok || !strings.Contains(e.Detail, "(the lease is gone)") {
				return fmt.Sprintf("client 1's extend ended %s: %s", e.Type, e.Detail)
			}
			return ""
		}
	}
	return "client 1's extend has no outcome"
}
