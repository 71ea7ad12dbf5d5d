package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/storage"
)

// TestGoWorkerHello: the harness's own worker opens the protocol as any
// client program must: version 2, every registered lock, every command,
// every storage mode.
func TestGoWorkerHello(t *testing.T) {
	var out bytes.Buffer
	if err := writeHello(&out); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("\n")) || bytes.Count(out.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("hello %q is not one line", out.String())
	}
	var h protocol.Hello
	if err := json.Unmarshal(out.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	if err := h.Covers("test-mem", protocol.Ops); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Locks, clients.Names()) {
		t.Fatalf("hello locks %v, want every registered lock %v", h.Locks, clients.Names())
	}
	if h.Protocol != protocol.ProtocolVersion || len(h.StorageModes) != len(storage.Modes()) || !h.CheckLease || !h.ClientClock {
		t.Fatalf("hello %+v: want version %d and everything a story can ask", h, protocol.ProtocolVersion)
	}
}

// TestStartWithChecksHello starts small shell programs as clients: one
// that speaks v1 is started and initialised; each that does not is
// refused with what was wrong, and killed.
func TestStartWithChecksHello(t *testing.T) {
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	helloTimeout = 500 * time.Millisecond
	const hello = `echo '{"protocol":1,"name":"sh","locks":["x"],"ops":["acquire","release"]}'`
	cases := []struct {
		name, script string
		ops          []string
		want         string // "" for a client that starts
	}{
		{"v1", hello + `; read l; echo '{"id":1,"done":true}'; cat >/dev/null`, []string{"acquire"}, ""},
		{"v2", `echo '{"protocol":2,"name":"sh","locks":["x"],"ops":["acquire","write"],"storage_modes":["plain"]}'; read l; echo '{"id":1,"done":true}'; cat >/dev/null`, []string{"acquire", "write"}, ""},
		{"v3", `echo '{"protocol":3,"locks":["x"],"ops":["acquire"]}'; cat >/dev/null`, nil, "speaks locksim worker protocol v3; this harness speaks v1 to v2"},
		{"lock", `echo '{"protocol":1,"locks":["y"],"ops":["acquire"]}'; cat >/dev/null`, nil, "implements the locks [y] (its hello); the story needs lock x"},
		{"op", hello + `; cat >/dev/null`, []string{"acquire", "extend"}, `the story needs "extend" too`},
		{"no hello", `echo '{"id":1,"done":true}'; cat >/dev/null`, nil, "its first line is not a hello line"},
		{"silent", `sleep 5`, nil, "printed no hello line within 500ms"},
		{"exits", `echo 'TypeError: boom' >&2; echo 'at line 1' >&2; exit 7`, nil, "exited (exit status 7) before printing its hello line; its stderr says: TypeError: boom"},
		{"closes stdout", `exec >&-; sleep 5`, nil, "closed its stdout before printing its hello line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			cl, err := startScript(t, c.script, "x", c.ops)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cl.Hello().Name != "sh" {
					t.Errorf("hello %+v", cl.Hello())
				}
				cl.Stop()
				return
			}
			if err == nil {
				cl.Stop()
				t.Fatalf("started; want an error saying %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), "client 1 (sh -c ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want client 1 (sh -c ...) and %q", err, c.want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("refused after %v: the program was not killed?", d)
			}
		})
	}
}

// startScript starts the shell script as client 1 of a story of lock
// with the commands ops, its log in the test's temp dir.
func startScript(t *testing.T, script, lock string, ops []string) (*Client, error) {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), "client.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	rec := history.NewRecorder(history.Monotonic(), nil)
	return StartWith(context.Background(), 1, rec, protocol.Init{Lock: lock}, logf, StartOptions{Argv: []string{"sh", "-c", script}, Ops: ops})
}

// TestProbe: Probe reads a program's hello line and ends the program at
// once, so the harness knows what it covers before any server starts; a
// program that opens with no hello of a version the harness speaks is
// one error naming the program.
func TestProbe(t *testing.T) {
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	helloTimeout = 500 * time.Millisecond
	start := time.Now()
	h, err := Probe(context.Background(), []string{"sh", "-c", `echo '{"protocol":2,"name":"p","locks":["x"],"ops":["acquire"],"watchdogs":["token"]}'; cat >/dev/null; echo bye >&2`})
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "p" || !slices.Equal(h.Watchdogs, []string{"token"}) {
		t.Fatalf("hello %+v", h)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("probe took %v: the program's stdin was not closed at once?", d)
	}
	_, err = Probe(context.Background(), []string{"sh", "-c", `echo '{"protocol":9,"locks":["x"],"ops":["acquire"]}'; cat >/dev/null`})
	if err == nil || err.Error() != "client program (sh -c echo '{\"protocol\":9,\"locks\":[\"x\"],\"ops\":[\"acquire\"]}'; cat >/dev/null): speaks locksim worker protocol v9; this harness speaks v1 to v2 (docs/protocol.md)" {
		t.Fatalf("error %v", err)
	}
}

// TestOwnLock: a program may name a lock of its own in its hello, like a
// catalogue lock on that lock's servers. It plays that lock's stories,
// receives its own name in init, and a hello that names it badly is
// refused with what was wrong.
func TestOwnLock(t *testing.T) {
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	helloTimeout = 500 * time.Millisecond
	// The program answers init only when init names its own lock.
	answer := `; read l; case "$l" in *'"lock":"my-lock"'*) echo '{"id":1,"done":true}';; *) echo "init: $l" >&2; exit 3;; esac; cat >/dev/null`
	hello := func(locks string) string {
		return `echo '{"protocol":2,"name":"sh","locks":` + locks + `,"ops":["acquire"]}'` + answer
	}
	cases := []struct {
		name, script string
		want         string // "" for a client that starts
	}{
		{"own", hello(`[{"name":"my-lock","like":"redis","servers":"redis"}]`), ""},
		{"own, servers left out", hello(`["redlock",{"name":"my-lock","like":"redis"}]`), ""},
		{"unknown like", hello(`[{"name":"my-lock","like":"redis-ish"}]`), "its hello's own lock my-lock is like redis-ish: "},
		{"other servers", hello(`[{"name":"my-lock","like":"redis","servers":"postgres"}]`), "runs on postgres, but the lock it is like, redis, runs on redis"},
		{"no name", hello(`[{"like":"redis"}]`), "expected a name and like"},
		{"twice", hello(`["redis",{"name":"my-lock","like":"redis"}]`), "its hello's locks name redis twice"},
		{"neither", hello(`[7]`), "its first line is not a hello line"},
		{"v1", `echo '{"protocol":1,"locks":[{"name":"my-lock","like":"redis"}],"ops":["acquire"]}'; cat >/dev/null`, "which came with protocol v2; it speaks v1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := startScript(t, c.script, "redis", []string{"acquire"})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if h := cl.Hello(); h.OwnName("redis") != "my-lock" || !slices.Contains(h.Locks, "redis") {
					t.Errorf("hello %+v: want my-lock standing for redis", h)
				}
				cl.Stop()
				return
			}
			if err == nil {
				cl.Stop()
				t.Fatalf("started; want an error saying %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want %q", err, c.want)
			}
		})
	}
}
