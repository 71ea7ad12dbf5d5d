package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
)

// TestRunJudgedAgainstReference: a lock of the user's that replaces the
// story's (--lock) is judged against the lock it stands in for, played
// on the same story: worse is a finding about it (exit 1), as good is
// exit 0, and a step it plays otherwise than the story tells is named,
// not a harness failure. The reference of a mutant's story is the lock
// the mutant breaks (redis-unsafe-release's redis-plain-del: redis).
func TestRunJudgedAgainstReference(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: plays stories on redis-server")
	}
	for _, c := range []struct {
		story string
		code  int
		want  []string
	}{
		{"redis-unsafe-release", exitMismatch, []string{
			"NOT as good as the reference redis",
			"lock redis-plain-del ended unsafe where the reference redis ended safe: a finding about redis-plain-del",
			"at step 4 the story says client 1's release ends ok: the reference redis shows refused (not-held)"}},
		{"redis-ttl-expiry", exitOK, []string{
			"at least as good as the reference redis",
			"lock redis-plain-del did as well as the reference redis: both ended unsafe"}},
		{"redis-failover", exitOK, []string{
			"lock redis-plain-del did as well as the reference redis: both ended unsafe",
			"at step 6 the story says client 1's release ends refused (not-held): lock redis-plain-del shows ok"}},
	} {
		t.Run(c.story, func(t *testing.T) {
			dir := runJudged(t, c.code, c.want, c.story, "--lock", "redis-plain-del")
			ref, ok := readResult(t, dir)["reference"].(map[string]any)
			if !ok || ref["lock"] != "redis" || ref["dir"] != filepath.Join(dir, "reference") {
				t.Errorf("result.json's reference: %v, want lock redis in %s/reference", ref, dir)
			}
			if readResult(t, filepath.Join(dir, "reference"))["check"] == nil {
				t.Errorf("the reference's run directory holds no result")
			}
		})
	}
	// The reference lock itself, or an --expect, is judged as ever.
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errb := sim(t, "run", "redis-ttl-expiry", "--lock", "redis", "-q", "--out", dir)
	if code != exitOK || strings.Contains(out, "reference") || readResult(t, dir)["reference"] != nil {
		t.Errorf("--lock redis on its own story: exit %d, stdout %q, stderr %q; want 0 and no reference", code, out, errb)
	}
}

// TestYourOwnLockJudged plays the README's "is my lock safe?" path: a
// hand-written Redis lock in Python whose release is a plain DEL
// (examples/my-lock, its hello naming it my-lock, like redis). On
// redis-unsafe-release it is a finding about my-lock, exit 1, where the
// reference redis refuses client 1's release; on redis-failover, which
// no single-node lock survives, it did as well as redis, exit 0, its
// release that the story says is refused named, not a harness failure.
func TestYourOwnLockJudged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3 and redis-server")
	}
	prog, err := filepath.Abs(filepath.Join("..", "examples", "my-lock", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"redis-unsafe-release", "--lock", "redis"}, exitMismatch, []string{
			"lock my-lock (like redis) of the client program (" + prog + ") ended unsafe where the reference redis ended safe: a finding about my-lock",
			"(the story's own lock, redis-plain-del, ends unsafe as told)",
			"at step 4 the story says client 1's release ends ok: the reference redis shows refused (not-held)"}},
		{[]string{"redis-failover"}, exitOK, []string{
			"did as well as the reference redis: both ended unsafe",
			"at step 6 the story says client 1's release ends refused (not-held): lock my-lock (like redis) of the client program (" + prog + ") shows ok"}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			dir := runJudged(t, c.code, c.want, append(c.args, "--client-cmd", prog)...)
			if lock := readResult(t, dir)["program_lock"]; lock != "my-lock" {
				t.Errorf("result.json's program_lock: %v, want my-lock", lock)
			}
		})
	}
}

// TestJudgedAgainstWhatItStandsFor: a stand-in is judged against the lock
// it stands in for, not against a story's own lock with a defence it
// does not claim. postgres-pooled stands in for postgres-session; on
// postgres-xact, whose own lock writes inside its transaction and ends
// safe, postgres-session ends unsafe, and so does postgres-pooled: no
// finding, exit 0, and the cell says how the story's own lock ends. (It
// was judged against postgres-xact, a finding, before.)
func TestJudgedAgainstWhatItStandsFor(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: plays stories on PostgreSQL")
	}
	dir := runJudged(t, exitOK, []string{
		"verdict unsafe, at least as good as the reference postgres-session",
		"lock postgres-pooled did as well as the reference postgres-session: both ended unsafe (the story's own lock, postgres-xact, ends safe as told)"},
		"postgres-xact", "--lock", "postgres-pooled")
	ref, _ := readResult(t, dir)["reference"].(map[string]any)
	if ref["lock"] != "postgres-session" || ref["story_lock"] != "postgres-xact" || ref["story_expected"] != "safe" || ref["worse"] != false {
		t.Errorf("result.json's reference: %v", ref)
	}
}

// TestHungReleaseIsAFinding: a client program whose release never
// returns (examples/redis-py behind a filter that drops every release)
// ends hung within the bound (the 1s lease plus 30s), its client
// killed, nothing of it left running; the reference redis returns and
// ends safe, so it is a finding about the program, exit 1. The history
// keeps the harness's note of the hung call, and no completion of the
// release.
func TestHungReleaseIsAFinding(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3 and redis-server")
	}
	client, err := filepath.Abs(filepath.Join("..", "examples", "redis-py", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	filter := filepath.Join(tmp, "no-release.py")
	os.WriteFile(filter, []byte(`#!/usr/bin/python3
# Runs the client given, but never passes it a release: a release never returns.
import json, subprocess, sys
child = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=sys.stdout, text=True, bufsize=1)
for line in sys.stdin:
    try:
        if json.loads(line).get("op") == "release":
            continue
    except ValueError:
        pass
    child.stdin.write(line)
    child.stdin.flush()
`), 0o755)
	story := filepath.Join(tmp, "release-hangs.yaml")
	os.WriteFile(story, []byte(`name: release-hangs
title: client 1 releases, and client 2 takes the lock
lock: redis
ttl: 1s
expected: safe
steps:
  - do: acquire
    client: 1
    expect: granted
  - do: release
    client: 1
    expect: ok
  - do: acquire
    client: 2
    expect: granted
`), 0o644)
	started := time.Now()
	dir := runJudged(t, exitMismatch, []string{
		"release-hangs: hung: client 1's release never returned within 31s (the harness killed it and ended the story there)",
		"ended hung where the reference redis ended safe: a finding about redis of the client program",
		"at step 2 the story says every call returns"},
		story, "--client-cmd", filter+" "+client)
	if d := time.Since(started); d > 2*time.Minute {
		t.Errorf("took %v: the bound is the lease plus 30s", d)
	}
	events, err := history.Load(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var hung, released int
	for _, e := range events {
		switch {
		case e.Op == history.OpHung:
			hung++
		case e.Op == history.OpRelease && e.Completes():
			released++
		}
	}
	if hung != 1 || released != 0 {
		t.Errorf("history: %d hung note(s), %d release completion(s); want 1 and 0", hung, released)
	}
	if n := env.LiveCount(); n != 0 {
		t.Errorf("%d child processes still running after the run", n)
	}
}

// runJudged plays sim run args -q into a run directory of its own, and
// again (up to three times in all) while the timing guard leaves the
// comparison with the reference undecided (the machine too busy); it
// fails t unless the run exits code with every line of want on stdout,
// and returns the run directory.
func runJudged(t *testing.T, code int, want []string, args ...string) string {
	t.Helper()
	var dir, out, errb string
	var got int
	for attempt := 1; attempt <= 3; attempt++ {
		dir = filepath.Join(t.TempDir(), "run")
		got, out, errb = sim(t, append(append([]string{"run"}, args...), "-q", "--out", dir)...)
		if !strings.Contains(out, "undecided: ") {
			break
		}
		t.Logf("attempt %d undecided: %s", attempt, out)
	}
	if got != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", got, code, out, errb)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	return dir
}
