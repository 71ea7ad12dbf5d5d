package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/scenarios"
)

// TestHuntFindsAStorySimRunPlays: sim hunt against single-node Redis
// under pauses exits 1 with a finding, and writes found.yaml, which sim
// run plays with its counterfactual flipped (exit 0), and hunt.json.
func TestHuntFindsAStorySimRunPlays(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	dir := t.TempDir()
	code, out, errOut := sim(t, "hunt", "redis", "--storage", "plain", "--faults", "pause", "--runs", "3", "--ttl", "300ms", "--seed", "1", "--out", dir)
	if code != 1 || !strings.Contains(out, "FOUND redis") {
		t.Fatalf("exit %d, want 1 with a finding; stdout %q, stderr %q", code, out, errOut)
	}
	var res hunt.Result
	b, err := os.ReadFile(filepath.Join(dir, "hunt.json"))
	if err != nil || json.Unmarshal(b, &res) != nil || !res.Found || res.Reproduced < 2 || !res.OneMinimal {
		t.Fatalf("hunt.json: %v %+v", err, res)
	}
	for _, f := range []string{"found.yaml", "original.yaml", "schema.json", "run/report.html", "run/counterfactual/result.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if code, out, errOut := sim(t, "run", filepath.Join(dir, "found.yaml"), "--counterfactual", "-q", "--out", t.TempDir()); code != 0 {
		t.Fatalf("sim run found.yaml --counterfactual: exit %d; %s %s", code, out, errOut)
	}
}

// TestHuntBadInputExits2: a lock, a storage or a fault it cannot search
// is one line and exit 2, before any server starts.
func TestHuntBadInputExits2(t *testing.T) {
	for _, args := range [][]string{
		{"hunt", "nolock"}, {"hunt", "redis", "--storage", "damp"}, {"hunt", "etcd", "--faults", "clock-drift"}, {"hunt", "redis", "--clients", "4"}, {"hunt"}, {"hunt", "redis", "--runs", "0"},
	} {
		code, _, errOut := sim(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "sim: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
	}
}

// TestHuntMerge: sim hunt merge joins the shards' hunt.json (a made-up
// hunt: no server starts), keeps the finding and exits 1; a directory
// that is not a hunt's, or a set with a shard missing, is one line and
// exit 2, and nothing is written; --partial merges what is there and
// hunt.json names the missing shard.
func TestHuntMerge(t *testing.T) {
	var dirs []string
	for i, found := range []bool{false, true} {
		dir := t.TempDir()
		res := hunt.Result{Found: found, Lock: "redis", Storage: "plain", Faults: []string{"pause"}, TTL: "1s", Seed: 1,
			Shard: []string{"1/2", "2/2"}[i], Candidates: 3, Summary: "unsafe: lost update"}
		if found {
			res.Final = &hunt.Plan{Faults: []hunt.Fault{{Kind: "pause", Client: 1, X: 1.1}}}
			for _, f := range []string{"found.yaml", "original.yaml", "schema.json"} {
				os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
			}
		}
		b, _ := json.Marshal(res)
		os.WriteFile(filepath.Join(dir, "hunt.json"), b, 0o644)
		dirs = append(dirs, dir)
	}
	out := t.TempDir()
	code, stdout, errOut := sim(t, append(append([]string{"hunt", "merge"}, dirs...), "--out", out)...)
	if code != 1 || !strings.Contains(stdout, "FOUND redis in 2 shard(s) of 2") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	var merged hunt.Result
	b, _ := os.ReadFile(filepath.Join(out, "hunt.json"))
	if json.Unmarshal(b, &merged) != nil || merged.Candidates != 6 || !merged.Found {
		t.Errorf("merged hunt.json: %s", b)
	}
	if _, err := os.Stat(filepath.Join(out, "found.yaml")); err != nil {
		t.Error(err)
	}
	if code, _, errOut := sim(t, "hunt", "merge", t.TempDir()); code != 2 || !strings.Contains(errOut, "not a hunt's directory") {
		t.Errorf("an empty directory: exit %d, stderr %q", code, errOut)
	}
	lost := filepath.Join(t.TempDir(), "merged")
	code, _, errOut = sim(t, "hunt", "merge", dirs[1], "--out", lost)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "shard 1/2 missing") {
		t.Errorf("shard 1 of 2 missing: exit %d, stderr %q; want 2 and one line naming it", code, errOut)
	}
	if _, err := os.Stat(lost); !os.IsNotExist(err) {
		t.Errorf("a refused merge wrote %s: %v", lost, err)
	}
	code, stdout, errOut = sim(t, "hunt", "merge", dirs[0], "--partial", "--out", lost)
	if code != 0 || !strings.Contains(stdout, "shard(s) 2/2 missing") {
		t.Errorf("--partial without shard 2: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	merged = hunt.Result{}
	b, _ = os.ReadFile(filepath.Join(lost, "hunt.json"))
	if json.Unmarshal(b, &merged) != nil || !slices.Equal(merged.MissingShards, []string{"2/2"}) || merged.Found {
		t.Errorf("--partial hunt.json: %s", b)
	}
}

// TestHuntClientProgramRefusedUpFront: a client program whose hello does
// not cover what the hunt asks (the lock, the storage mode, a fenced
// mode's token, a client's clock a --faults kind must move, a baseline
// program without the baseline's lock) is refused in one line, exit 2,
// before any server starts.
func TestHuntClientProgramRefusedUpFront(t *testing.T) {
	hello := func(line string) string { return "sh -c " + "echo${IFS}'" + line + "';cat>/dev/null" }
	redis := hello(`{"protocol":2,"locks":["redis"],"ops":["acquire","release","extend","write"],"storage_modes":["plain","fenced"]}`)
	v1 := hello(`{"protocol":1,"locks":["redis"],"ops":["acquire","release","extend"],"storage_modes":["plain"]}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"hunt", "zookeeper", "--client-cmd", redis}, "implements the locks [redis] (its hello), not zookeeper"},
		{[]string{"hunt", "redis", "--storage", "token-cas", "--client-cmd", redis}, "does not write the protected storage in mode token-cas"},
		{[]string{"hunt", "redis", "--storage", "plain", "--client-cmd", v1}, "does not write the protected storage in mode plain (its hello: ops [acquire release extend], storage_modes [])"},
		{[]string{"hunt", "redis", "--storage", "fenced", "--client-cmd", redis}, "draws no postgres fencing token for --storage fenced (its hello: fences [])"},
		{[]string{"hunt", "postgres-session", "--faults", "clock-jump", "--client-cmd", hello(`{"protocol":2,"locks":["postgres-session"],"ops":["acquire","release"]}`)}, "--faults clock-jump: it would step a client's clock"},
		{[]string{"hunt", "redis-plain-del", "--baseline", "redis", "--baseline-cmd", hello(`{"protocol":2,"locks":["redlock"],"ops":["acquire","release"]}`)}, `--baseline-cmd "sh -c`},
		{[]string{"hunt", "redis", "--baseline-cmd", redis}, "--baseline-cmd: it plays the baseline, and there is none"},
		{[]string{"hunt", "redis", "--client-cmd", "no-such-program-x"}, `cannot run "no-such-program-x"`},
	} {
		code, out, errOut := sim(t, c.args...)
		if code != exitHarness || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestHuntClientProgram: sim hunt of a client program (redis-py's Lock,
// Debian's python3-redis) under pauses finds the lost update, writes a
// found.yaml that names the program and that sim run replays with its
// counterfactual flipped. Kazoo's Lock (python3-kazoo) with fenced
// storage, each write carrying the znode's czxid, under pauses, finds
// nothing.
func TestHuntClientProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	example := func(path string) string {
		t.Helper()
		abs, err := filepath.Abs(filepath.Join("..", path))
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	prog := example("examples/redis-py/client.py")
	dir := t.TempDir()
	code, out, errOut := sim(t, "hunt", "redis", "--client-cmd", prog, "--storage", "plain", "--faults", "pause", "--runs", "3", "--ttl", "300ms", "--seed", "1", "--out", dir)
	if code != exitMismatch || !strings.Contains(out, "FOUND redis") || !strings.Contains(errOut, "clients: "+prog) {
		t.Fatalf("exit %d, want 1 with a finding by %s; stdout %q, stderr %q", code, prog, out, errOut)
	}
	found, err := os.ReadFile(filepath.Join(dir, "found.yaml"))
	if err != nil || !strings.Contains(string(found), "client_cmd:\n  - "+prog) {
		t.Fatalf("found.yaml names no client_cmd %s: %v\n%s", prog, err, found)
	}
	var res hunt.Result
	if b, err := os.ReadFile(filepath.Join(dir, "hunt.json")); err != nil || json.Unmarshal(b, &res) != nil || strings.Join(res.ClientCmd, " ") != prog {
		t.Fatalf("hunt.json: %v %+v", err, res)
	}
	if code, out, errOut := sim(t, "run", filepath.Join(dir, "found.yaml"), "--counterfactual", "-q", "--out", t.TempDir()); code != 0 {
		t.Fatalf("sim run found.yaml --counterfactual: exit %d; %s %s", code, out, errOut)
	}
	safe := t.TempDir()
	code, out, errOut = sim(t, "hunt", "zookeeper", "--client-cmd", example("examples/kazoo/client.py"), "--storage", "fenced", "--faults", "pause", "--runs", "4", "--seed", "1", "--out", safe)
	if code != exitOK || !strings.Contains(out, "nothing found: 4 candidate(s)") {
		t.Fatalf("a hunt of Kazoo with fenced storage: exit %d, want 0 and nothing found; stdout %q, stderr %q", code, out, errOut)
	}
}

// TestHuntStorageDefault: told no --storage, a hunt of a client program
// that writes the protected storage searches it in mode plain (where a
// lease used past its end shows), and one of locksim's locks, or a
// program that does not write, mutual exclusion alone.
func TestHuntStorageDefault(t *testing.T) {
	writes := scenarios.ClientProgram{Protocol: 2, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "write"}, StorageModes: []string{"plain", "fenced"}}
	v1 := writes
	v1.Protocol = 1 // a v1 program covers no storage, whatever its line says
	fencedOnly := writes
	fencedOnly.StorageModes = []string{"fenced"}
	for _, c := range []struct {
		name string
		p    *scenarios.ClientProgram
		want string
	}{{"locksim's lock", nil, "none"}, {"a program that writes", &writes, "plain"}, {"a v1 program", &v1, "none"}, {"a program without plain", &fencedOnly, "none"}} {
		if got, why := storageFor(c.p); got != c.want || (got == "plain") != (why != "") {
			t.Errorf("%s: storage %q (%q), want %q", c.name, got, why, c.want)
		}
	}
}

// TestHuntPrintsHuntJSONsCounts: the counts sim hunt prints under a
// finding are hunt.json's, field for field (a hunt played by a stand-in
// for the servers: unsafe when client 1 is paused for 1.04 TTL or more).
func TestHuntPrintsHuntJSONsCounts(t *testing.T) {
	sp, err := hunt.NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	play := func(_ context.Context, s *hunt.Story) (hunt.Played, error) {
		for _, f := range s.Plan.Faults {
			if f.Kind == "pause" && f.Client == 1 && f.X >= 1.04 && f.At.Client == 1 && (f.At.Event == hunt.Granted || f.At.Event == hunt.Read) {
				return hunt.Played{Verdict: checker.Unsafe, Summary: "a lost update"}, nil
			}
		}
		return hunt.Played{Verdict: checker.Safe}, nil
	}
	res, _, _, err := hunt.Run(context.Background(), hunt.Options{Space: sp, Seed: 3, Runs: 20, Play: play})
	if err != nil || !res.Found {
		t.Fatalf("found %v, %v", res != nil && res.Found, err)
	}
	b, _ := json.Marshal(res)
	var fields map[string]any
	json.Unmarshal(b, &fields)
	line := res.Counts()
	m := regexp.MustCompile(`^after (\d+) candidate\(s\) \((\d+) run\(s\)\) in \d+s; shrunk from (\d+) fault\(s\) to (\d+) in (\d+) run\(s\); ` +
		`reproduced (\d+) of (\d+) in (\d+) run\(s\); (\d+) story run\(s\) in all$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("sim hunt prints %q", line)
	}
	for i, k := range []string{"candidates", "candidate_runs", "faults_before", "faults_after", "shrink_runs", "reproduced", "reproduced_of",
		"reproduction_runs", "story_runs"} {
		if n, _ := strconv.Atoi(m[i+1]); float64(n) != fields[k] {
			t.Errorf("sim hunt prints %d for hunt.json's %s, %v: %q", n, k, fields[k], line)
		}
	}
	if got, want := res.Runs(), strconv.Itoa(res.Candidates)+" candidate(s) ("+strconv.Itoa(res.CandidateRuns)+" run(s))"; got != want {
		t.Errorf("Runs: %q, want %q", got, want)
	}
}

// TestHuntTTLDefault: told no --ttl, a hunt asks for 500ms, or for the
// lock's shortest lease when that is longer (etcd's 2s), so that sim hunt
// etcd runs as told nothing but its name.
func TestHuntTTLDefault(t *testing.T) {
	for lock, want := range map[string]time.Duration{"redis": 500 * time.Millisecond, "etcd": 2 * time.Second, "etcd-lock-service": 2 * time.Second} {
		if got := defaultHuntTTL(lock); got != want {
			t.Errorf("%s: %v, want %v", lock, got, want)
		}
	}
}

// TestHuntHelpNamesEveryKind: the help's prose, which groups the fault
// kinds by how a hunt places them, names every kind the registry lets a
// hunt place, so that a kind added to the registry is told there too.
func TestHuntHelpNamesEveryKind(t *testing.T) {
	long := strings.Join(strings.Fields(huntCmd().Long), " ")
	for _, k := range hunt.Searchable() {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b`).MatchString(long) {
			t.Errorf("sim hunt --help does not name the fault kind %s", k)
		}
	}
}

// TestHuntGoesOnAfterAHarnessFailure: sim hunt of a client program (redis-py's
// Lock) whose fourth start dies before its hello: that story run is a
// harness failure, played again on fresh servers; the hunt goes on to its
// finding (exit 1), hunt.json counts the failure and stdout says so.
func TestHuntGoesOnAfterAHarnessFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	prog, err := filepath.Abs(filepath.Join("..", "examples", "redis-py", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	starts := t.TempDir()
	wrapper := filepath.Join(t.TempDir(), "dies-once.sh")
	script := "#!/bin/sh\n# numbers its start (mkdir is atomic), and the fourth dies before its hello\ni=1\nwhile ! mkdir \"" + starts + "/$i\" 2>/dev/null; do i=$((i+1)); done\n" +
		"[ \"$i\" = 4 ] && exit 3\nexec /usr/bin/python3 " + prog + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, out, errOut := sim(t, "hunt", "redis", "--client-cmd", wrapper, "--storage", "plain", "--faults", "pause", "--runs", "3", "--ttl", "300ms", "--seed", "1", "--out", dir)
	if code != exitMismatch || !strings.Contains(out, "FOUND redis") || !strings.Contains(errOut, "harness failure (not a verdict)") {
		t.Fatalf("exit %d, want 1 with a finding after a harness failure; stdout %q, stderr %q", code, out, errOut)
	}
	var res hunt.Result
	if b, err := os.ReadFile(filepath.Join(dir, "hunt.json")); err != nil || json.Unmarshal(b, &res) != nil || res.HarnessFailures != 1 {
		t.Fatalf("hunt.json: %v, harness_failures %d, want 1", err, res.HarnessFailures)
	}
	if !strings.Contains(out, "1 harness failure(s) played again") {
		t.Errorf("stdout does not count the harness failure: %q", out)
	}
}

// TestHuntPortalocker: sim hunt of portalocker's RedisLock
// (examples/portalocker, Debian's python3-portalocker) with redis as the
// baseline counts only a schedule that breaks portalocker and not
// locksim's redis; in its first 4 candidates (seed 1) it finds none (a
// lock held by a connection, with no TTL, is not lost to a pause or a
// clock; examples/portalocker/README.md).
func TestHuntPortalocker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	prog, err := filepath.Abs(filepath.Join("..", "examples", "portalocker", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sim(t, "hunt", "redis", "--client-cmd", prog, "--baseline", "redis", "--runs", "4", "--seed", "1", "--out", t.TempDir())
	if code != exitOK || !strings.Contains(out, "nothing found: 4 candidate(s)") || !strings.Contains(errOut, "clients: "+prog) {
		t.Fatalf("exit %d, want 0 and nothing found by %s; stdout %q, stderr %q", code, prog, out, errOut)
	}
}
