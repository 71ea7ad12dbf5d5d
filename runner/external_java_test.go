package runner

// The Java example client (examples/zookeeper-writelock: ZooKeeper's own
// lock recipe, WriteLock, from Debian's libzookeeper-java) on real servers.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
)

const (
	// writeLockClientPath is the Java client's launcher, from the
	// repository's root.
	writeLockClientPath = "examples/zookeeper-writelock/client"
	// writeLockRoot is where the Java client's locks live: each lease's
	// token is a znode under writeLockRoot/<key> (Client.ROOT).
	writeLockRoot = "/locksim/writelock"
)

// writeLockClient is the Java example client as a client_cmd, built
// (javac against Debian's jars, examples/zookeeper-writelock/build), or a
// skip when java is not installed. Its jars must be: make test-deps.
func writeLockClient(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		missingProgram(t, "java is not installed: the Java client (examples/zookeeper-writelock) cannot run here", err)
	}
	path, err := filepath.Abs(filepath.Join("..", writeLockClientPath))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(path), "build")).CombinedOutput(); err != nil {
		t.Fatalf("building examples/zookeeper-writelock (it needs javac, libzookeeper-java and libpostgresql-jdbc-java: make test-deps): %v: %s", err, out)
	}
	return []string{path}
}

// TestClientProgramZooKeeperWriteLock plays, through protocol v2, the
// ZooKeeper stories with every client ZooKeeper's WriteLock recipe
// (examples/zookeeper-writelock; JDBC for the storage): a holder paused
// past its session, the same pause fenced by the znode's czxid, and a
// holder cut off from the ensemble, each story's counterfactual flipping
// its verdict; and a member crash, which costs the lock nothing (its
// counterfactual changes the lock to Redlock, which the program has not).
func TestClientProgramZooKeeperWriteLock(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts java, ZooKeeper and PostgreSQL")
	}
	argv := writeLockClient(t)
	for _, name := range []string{"zookeeper-pause", "zookeeper-pause-fenced", "zookeeper-partition"} {
		t.Run(name, func(t *testing.T) { playExternalFlipped(t, name, "", argv) })
	}
	t.Run("zookeeper-member-crash", func(t *testing.T) {
		if res := playExternal(t, "zookeeper-member-crash", argv); res.Verdict != checker.Safe {
			t.Fatalf("zookeeper-member-crash with WriteLock: verdict %s, want %s: %s", res.Verdict, checker.Safe, res.Summary)
		}
	})
}

// TestJavaNanoTimeIsMonotonic: Java's System.nanoTime(), which the Java
// client stamps its events with, reads CLOCK_MONOTONIC in nanoseconds,
// the harness's clock: a reading taken by the client's JVM (client
// --monotonic) falls between two of the harness's taken around it.
func TestJavaNanoTimeIsMonotonic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts java")
	}
	argv := writeLockClient(t)
	before := history.Monotonic()
	cmd := exec.Command(argv[0], "--monotonic")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	after := history.Monotonic()
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if v < before || v > after {
		t.Fatalf("java's System.nanoTime() %d is not between the harness's CLOCK_MONOTONIC readings %d and %d", v, before, after)
	}
}
