package cli

import (
	"path/filepath"
	"strings"
	"testing"
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
