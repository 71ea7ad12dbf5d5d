package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/matrix"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// TestFindingsBadInput: a name --only does not know, a --doc that is not
// Markdown, or a findings.json locksim did not write is one line, exit
// 2, before anything runs.
func TestFindingsBadInput(t *testing.T) {
	dir := t.TempDir()
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "notes.md")
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"mine": true}`), 0o644)
	page, _ := (&findings.Report{WrittenBy: findings.WrittenBy, Subjects: []findings.Subject{{Name: "redis", Lock: "redis"}}}).JSON()
	os.WriteFile(filepath.Join(dir, "page.json"), page, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"findings", "--only", "redsink"}, "--only redsink: no lock or client program of that name (etcd, "},
		{[]string{"findings", "--doc", filepath.Join(dir, "f.txt")}, "expected a Markdown file (.md)"},
		{[]string{"findings", "--doc", theirs}, "not a findings.json locksim wrote"},
		{[]string{"findings", "--hunt-budget", "0s"}, "--hunt-budget: expected a positive duration"},
		{[]string{"findings", "--shard", "1/2"}, "--shard 1/2: give the shard a --doc of its own (e.g. shard-1/findings.md)"},
		{[]string{"findings", "--shard", "3/2", "--doc", filepath.Join(dir, "s.md")}, `--shard "3/2": expected 1 <= I <= N`},
		{[]string{"findings", "--shards", "2", "--doc", filepath.Join(dir, "s.md")}, "--shards 2: it counts the shards of --shard auto"},
		{[]string{"findings", "--report", "redis", "--doc", filepath.Join(dir, "none.md")}, "--report redis: " + filepath.Join(dir, "none") + ".json lists no lock: sim findings (--doc "},
		{[]string{"findings", "--report", "redsink", "--doc", filepath.Join(dir, "page.md")}, "--report redsink: the findings page has no lock of that name (redis); sim findings --only redsink plays it first"},
		{[]string{"findings", "--report", "redis", "--only", "redis"}, "--only has no effect with --report"},
		{[]string{"findings", "--repeat", "3"}, "--repeat has no effect without --report"},
		{[]string{"findings", "--balance", filepath.Join(dir, "page.json")}, "--balance has no effect without --shard or --jobs"},
		{[]string{"findings", "--shard", "1/2", "--doc", filepath.Join(dir, "s.md"), "--balance", filepath.Join(dir, "none.json")}, "--balance " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{[]string{"findings", "--shard", "1/2", "--doc", filepath.Join(dir, "s.md"), "--balance", filepath.Join(dir, "notes.json")}, "not a findings .json locksim wrote"},
		{[]string{"findings", "--shard", "1/2", "--doc", filepath.Join(dir, "s.md"), "--balance", filepath.Join(dir, "page.json")}, "no row of it has a time"},
		{[]string{"findings", "--report", "redis", "--repeat", "0", "--doc", filepath.Join(dir, "page.md")}, "--repeat: expected 1 or more, got 0"},
	} {
		code, out, errb := sim(t, append(c.args, "--examples", examples, "--out", filepath.Join(t.TempDir(), "runs"))...)
		if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errb, c.want)
		}
	}
}

// TestFindingsOfOneProgram plays sim findings --only on one client program
// (examples/my-lock) into a page of its own: every story of its servers
// is a cell with the command that plays it again, a story the program
// cannot play says why, and the hunt ran.
func TestFindingsOfOneProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "findings.md")
	code, out, errb := sim(t, "findings", "--only", "my-lock", "--examples", examples, "--doc", doc, "--hunt-runs", "2", "--out", filepath.Join(t.TempDir(), "runs"))
	if code != exitOK || !strings.Contains(out, "my-lock") || !strings.Contains(errb, "[########################] ") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| [my-lock](#my-lock) | my-lock: a hand-written Redis lock",
		"| redis-ttl-expiry | ",
		"`bin/sim run redis-unsafe-release --lock redis --client-cmd \"" + filepath.Join(examples, "my-lock", "client.py") + "\"`",
		"| redis-watchdog | n/a: ", // no watchdog in its hello: the cell says why
		// A story of its servers that its lock cannot be put in (a node
		// it lacks) is a row that says why, with no replay command.
		"| redlock-clock-jump | n/a: scenario redlock-clock-jump names node E (step 1); lock redis runs on one node, A |  |\n",
		"Hunt: `bin/sim hunt redis --realistic --client-cmd",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("findings.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"findings.html", "findings.json"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(doc), f)); err != nil {
			t.Error(err)
		}
	}
}

// TestFindingsShardsSplitTheLocks: the shards of a split play every lock
// once between them: each every Nth, or, given the rows' times, the
// longest first to the shard with the least so far (a lock without a
// time weighing their mean).
func TestFindingsShardsSplitTheLocks(t *testing.T) {
	var all []subject
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		all = append(all, subject{Subject: findings.Subject{Name: n}})
	}
	split := func(times map[string]float64) string {
		var got []string
		for i := 1; i <= 2; i++ {
			for _, s := range ofShard(all, sharding.Shard{I: i, N: 2}, times) {
				got = append(got, s.Name)
			}
			got = append(got, "|")
		}
		return strings.Join(got, "")
	}
	if got := split(nil); got != "ace|bd|" || len(ofShard(all, sharding.Shard{}, nil)) != 5 {
		t.Errorf("shards 1/2 then 2/2 play %v; want a c e, then b d", got)
	}
	// a and c are long: every 2nd would give both to shard 1. e has no
	// time: it weighs the mean, 240.
	times := map[string]float64{"a": 400, "b": 100, "c": 380, "d": 80}
	if got := split(times); got != "abd|ce|" {
		t.Errorf("by the rows' times, shards 1/2 then 2/2 play %v; want a b d (580), then c e (620: e weighs 240)", got)
	}
}

// TestFindingsMerge plays the user's path of a split run's end: two
// shards' findings.json, sim findings merge into a page, every lock of
// both on it and no shard left; bad input is one line, exit 2.
func TestFindingsMerge(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, name := range []string{"redis", "etcd"} {
		r := &findings.Report{Command: "bin/sim findings", Seed: 1, Shard: fmt.Sprintf("%d/2", i+1),
			Subjects: []findings.Subject{{Name: name, Lock: name, About: "the " + name + " lock", Date: "2026-12-02",
				Hunt: &findings.Hunt{Runs: 3, Command: "bin/sim hunt " + name}}}}
		b, err := r.JSON()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("shard-%d", i+1), "findings.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	doc := filepath.Join(dir, "merged", "findings.md")
	os.MkdirAll(filepath.Dir(doc), 0o755)
	code, out, errb := sim(t, append(append([]string{"findings", "merge"}, paths...), "--doc", doc)...)
	if code != exitOK || !strings.Contains(out, "2 lock(s) from 2 shard(s)") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	md, _ := os.ReadFile(doc)
	js, _ := os.ReadFile(filepath.Join(dir, "merged", "findings.json"))
	for _, want := range []string{"the redis lock", "the etcd lock"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("findings.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(js), `"shard"`) {
		t.Errorf("the merged findings.json is still a shard:\n%s", js)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{paths[0]}, "shard 2/2 missing"},
		{[]string{paths[0], filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{[]string{paths[0], paths[1], "--doc", filepath.Join(dir, "f.txt")}, "expected a Markdown file (.md)"},
	} {
		code, out, errb := sim(t, append([]string{"findings", "merge"}, c.args...)...)
		if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.args, code, out, errb, c.want)
		}
	}
}

// TestFindingsCost: sim findings cost DIR renders the page from its .json
// and DIR/cost.json (findings/testdata/cost.json), playing nothing: the
// redis row gets its line, a client program says not measured, the .json
// keeps the run; a directory with no cost.json and a file that is not
// one are each refused in one line, exit 2.
func TestFindingsCost(t *testing.T) {
	dir := t.TempDir()
	r := &findings.Report{Command: "bin/sim findings", Seed: 1, Subjects: []findings.Subject{
		{Name: "redis", Lock: "redis", About: "the redis lock", Date: "2026-12-02"},
		{Name: "redis-py", Lock: "redis", Program: []string{"examples/redis-py/client.py"}, About: "redis-py", Date: "2026-12-02"}}}
	writePage(t, dir, r)
	doc := filepath.Join(dir, "findings.md")
	costDir := filepath.Join(dir, "cost")
	os.MkdirAll(costDir, 0o755)
	fixture, _ := os.ReadFile(filepath.Join("..", "findings", "testdata", "cost.json"))
	os.WriteFile(filepath.Join(costDir, "cost.json"), fixture, 0o644)
	code, out, errb := sim(t, "findings", "cost", costDir, "--doc", doc)
	if code != exitOK || !strings.Contains(out, "cost figures from bin/sim cost --locks redis,redlock --duration 300ms, run 2026-12-04 09:00 on 2 cores") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	md, _ := os.ReadFile(doc)
	js, _ := os.ReadFile(filepath.Join(dir, "findings.json"))
	for _, want := range []string{"| 150 / 300 µs (3.0× / 3.0×), 4321/s |", "Cost: not measured: sim cost times locksim's own Go locks, not a client program's library."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("findings.md lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(string(js), `"acquire_release"`) || strings.Contains(string(js), `"marks"`) {
		t.Errorf("findings.json does not keep the cost run (without its marks):\n%s", js)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"rows": []}`), 0o644)
	for _, c := range []struct{ arg, want string }{
		{dir + "/nowhere", "nowhere: open"},
		{bad, "bad.json: not a cost.json sim cost wrote: expected \"started\" and \"rows\""},
	} {
		code, out, errb := sim(t, "findings", "cost", c.arg, "--doc", doc)
		if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line with %q", c.arg, code, out, errb, c.want)
		}
	}
}

// TestFindingsReport plays sim findings --report as a maintainer would:
// a page that lists a finding about examples/my-lock (its release
// deletes whoever holds the lock, on redis-unsafe-release), then the
// report, which plays it again twice beside its reference and writes
// docs/findings/my-lock.md: the versions, k of n from its own runs, the
// command that replays it, and the story.
func TestFindingsReport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server and PostgreSQL")
	}
	prog, err := filepath.Abs(filepath.Join("..", "examples", "my-lock", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "findings.md")
	page := &findings.Report{WrittenBy: findings.WrittenBy, Subjects: []findings.Subject{{
		Name: "my-lock", Lock: "redis", Program: []string{prog}, About: "my-lock: a hand-written Redis lock",
		Cells: []findings.Cell{{Story: "redis-unsafe-release", Kind: "finding"}, {Story: "redis-ttl-expiry", Kind: "match"}}}}}
	writePage(t, dir, page)
	code, out, errb := sim(t, "findings", "--report", "my-lock", "--repeat", "2", "--doc", doc, "--out", filepath.Join(dir, "runs"))
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
	}
	md, err := os.ReadFile(filepath.Join(dir, "findings", "my-lock.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), strings.TrimSpace(out)) {
		t.Errorf("stdout is not the report written:\n%s", out)
	}
	for _, want := range []string{
		"## 1. my-lock: ",
		"- library: my-lock: a hand-written Redis lock",
		"- runtime: Python 3.",
		"- OS: Debian",
		"bin/sim run redis-unsafe-release --lock redis --client-cmd \"" + prog + "\" --repeat 2",
		"**The story** (`scenarios/redis-unsafe-release.yaml`)",
		"name: redis-unsafe-release",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "redis-ttl-expiry") {
		t.Errorf("the report has a story the page did not call a finding:\n%s", md)
	}
	// Both runs end worse than the reference, unless the machine was too
	// busy to tell (the report then says so).
	switch {
	case strings.Contains(string(md), "**How often**: 2 of 2 runs ended worse than the reference."):
		if !strings.Contains(string(md), "- servers: 1 Redis 7.") || !strings.Contains(string(md), "**Expected** (the reference, on the same story): the reference redis ends `safe`") {
			t.Errorf("a reproduced finding without its servers' versions or the reference's verdict:\n%s", md)
		}
	case strings.Contains(string(md), "too slow"):
		t.Logf("the machine was too busy to decide every run:\n%s", md)
	default:
		t.Errorf("want 2 of 2 runs worse than the reference:\n%s", md)
	}
}

// TestFindingsSubjectsLeaveOutMutants: the page plays the locks people
// run, never a mutant (a lock broken on purpose, a counterfactual's) nor a
// lock registered for tests only.
func TestFindingsSubjectsLeaveOutMutants(t *testing.T) {
	subs, err := subjects(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range subs {
		spec, err := clients.Lookup(s.Lock)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Mutant != "" || strings.HasPrefix(s.Name, "test-") {
			t.Errorf("subject %s is a mutant or a test lock", s.Name)
		}
		names = append(names, s.Name)
	}
	for _, want := range []string{"redis", "redlock", "etcd", "zookeeper", "postgres-session"} {
		if !slices.Contains(names, want) {
			t.Errorf("subjects %v lack %s", names, want)
		}
	}
}

// TestNoticeStoriesAreTheirFault: each story that measures a lock's time
// to notice is in the catalogue, and the fault it is listed for (a pause
// of a client, or a cut of its links) is what its story does to the
// holder, client 1.
func TestNoticeStoriesAreTheirFault(t *testing.T) {
	effect := map[string]string{"pause": history.EffectPause, "partition": history.EffectNetwork}
	for _, f := range findings.NoticeStories {
		if effect[f.Fault] == "" {
			t.Fatalf("fault %q: no effect known for it", f.Fault)
		}
		for _, name := range f.Stories {
			sc, err := scenarios.Find(name)
			if err != nil {
				t.Errorf("%s story %s: %v", f.Fault, name, err)
				continue
			}
			hit := false
			for _, st := range sc.Steps {
				if ff, ok := st.Fault(); ok && ff.Effect == effect[f.Fault] && ff.Client == 1 {
					hit = true
				}
			}
			if !hit {
				t.Errorf("%s story %s: no %s of client 1 in its steps", f.Fault, name, effect[f.Fault])
			}
		}
	}
}

// TestHuntTrap: a hunt with no baseline that shrinks to a schedule every
// lock without fencing loses to is named by it, and the page says so
// instead of a bare "found"; any other story is not named.
func TestHuntTrap(t *testing.T) {
	s := findings.Subject{Name: "redis", Lock: "redis", Cells: []findings.Cell{{Story: "redis-watchdog-pause", Kind: "match"}}}
	for _, c := range []struct {
		faults []hunt.Fault
		want   string
	}{
		{nil, "the TTL trap (work that outlasts the TTL, the schedule of redis-ttl-expiry)"},
		{[]hunt.Fault{{Kind: "pause", Client: 1, X: 1.5}}, "the pause past the TTL (the schedule of redis-watchdog-pause)"},
		{[]hunt.Fault{{Kind: "pause", Client: 1, X: 0.5}}, ""},
		{[]hunt.Fault{{Kind: "pause", Client: 2, X: 2}}, ""},
		{[]hunt.Fault{{Kind: "pause", Client: 1, X: 2}, {Kind: "latency", Client: 2, X: 0.1}}, ""},
	} {
		if got := trap(&hunt.Plan{Faults: c.faults}, s); got != c.want {
			t.Errorf("%+v: trap %q, want %q", c.faults, got, c.want)
		}
	}
	h := &findings.Hunt{Found: true, Runs: 2, Trap: "the pause past the TTL"}
	if w := h.Word(false); !strings.Contains(w, "which every lock whose holder trusts its lease shares") || strings.HasPrefix(w, "found") {
		t.Errorf("the page's hunt word %q", w)
	}
}

// TestReportSubjects: --report names a subject by its name, its lock (for
// locksim's own) or its program's folder, which names one subject for
// each of the servers the program plays on, each of which gets its page.
func TestReportSubjects(t *testing.T) {
	prog := []string{"node", "examples/node-redlock/client.js"}
	r := &findings.Report{Subjects: []findings.Subject{
		{Name: "redis", Lock: "redis"},
		{Name: "node-redlock (redis)", Lock: "redis", Program: prog},
		{Name: "node-redlock (redlock)", Lock: "redlock", Program: prog},
	}}
	for name, want := range map[string][]string{
		"node-redlock":           {"node-redlock (redis)", "node-redlock (redlock)"},
		"node-redlock (redlock)": {"node-redlock (redlock)"},
		"redis":                  {"redis"},
	} {
		subs, err := reportSubjects(r, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, s := range subs {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("--report %s: %v, want %v", name, got, want)
		}
	}
	if _, err := reportSubjects(r, "redlock"); err == nil || !strings.Contains(err.Error(), "sim findings --only redlock plays it first") {
		t.Errorf("--report redlock, which the page lacks: %v", err)
	}
}

// A client program's folder keeps stories about its library: sim findings
// plays those whose client_cmd runs that program, beside the catalogue's,
// and their cells replay from the file. A folder's story for another
// program, or a program with none, adds nothing.
func TestFindingsProgramStories(t *testing.T) {
	t.Chdir("..") // a story names its client_cmd from the repository's root, as sim is run
	names := func(argv []string) []string {
		t.Helper()
		list, err := programStories(argv)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sc := range list {
			out = append(out, sc.Name)
		}
		return out
	}
	tooz := names([]string{filepath.Join("examples", "tooz", "client.py")})
	want := []string{"tooz-etcd3-heartbeat-expired", "tooz-pgsql-idle-in-transaction", "tooz-memcached-heartbeat-touch", "tooz-memcached-release-race", "tooz-zookeeper-orphan-contender"}
	for _, w := range want {
		if !slices.Contains(tooz, w) {
			t.Errorf("tooz's stories %v lack %s", tooz, w)
		}
	}
	if len(tooz) != len(want) {
		t.Errorf("tooz's stories: %v, want %v", tooz, want)
	}
	// examples/tooz-etcd3gw runs examples/tooz's program: its own folder's
	// stories are its, and examples/tooz's are not.
	if got := names([]string{filepath.Join("examples", "tooz-etcd3gw", "client.py")}); !slices.Equal(got, []string{"tooz-etcd3gw-heartbeat-expired", "tooz-etcd3gw-timeout-ignored"}) {
		t.Errorf("tooz-etcd3gw's stories: %v, want [tooz-etcd3gw-heartbeat-expired tooz-etcd3gw-timeout-ignored]", got)
	}
	// examples/node-redlock/retry-expired.yaml names no client_cmd.
	if got := names([]string{"node", filepath.Join("examples", "node-redlock", "client.js")}); len(got) != 0 {
		t.Errorf("node-redlock's stories: %v, want none", got)
	}
	if got := names(nil); got != nil {
		t.Errorf("locksim's own lock: %v, want none", got)
	}

	list, err := programStories([]string{filepath.Join("examples", "tooz", "client.py")})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range list {
		if sc.Name != "tooz-memcached-release-race" {
			continue
		}
		s := findings.Subject{Name: "tooz (memcached)", Lock: "memcached", Program: []string{"examples/tooz/client.py"}}
		got := replay(s, &matrix.Cell{Scenario: sc.Name, Played: sc})
		if want := `bin/sim run examples/tooz/memcached-release-race.yaml --client-cmd "examples/tooz/client.py"`; got != want {
			t.Errorf("replay: %s, want %s", got, want)
		}
	}
}

// TestReplayOfACounterfactualCell: a cell whose lock is the story's
// counterfactual (zookeeper on zookeeper-lock-delay) is replayed with
// --counterfactual, which plays that lock on the story, not with --lock,
// which would judge it against the story's lock.
func TestReplayOfACounterfactualCell(t *testing.T) {
	sc, err := scenarios.Find("zookeeper-lock-delay")
	if err != nil {
		t.Fatal(err)
	}
	m := matrix.Plan([]string{"zookeeper"}, []*scenarios.Scenario{sc}, t.TempDir(), nil)
	s := findings.Subject{Name: "zookeeper", Lock: "zookeeper"}
	if got, want := replay(s, m.Cell("zookeeper", sc.Name)), "bin/sim run zookeeper-lock-delay --counterfactual"; got != want {
		t.Errorf("replay: %q, want %q", got, want)
	}
}

// TestClocklessCells: on an etcd version no clock fault reaches, a story
// that moves a member's clock is n/a with the reason, and the other
// stories are played as planned.
func TestClocklessCells(t *testing.T) {
	list := catalogueStories(t, "etcd-member-clock-jump", "etcd-pause")
	m, err := planFindings("etcd", list, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	clocklessNA(m, clients.EtcdBackend, "0.0.1") // a version not here takes none
	jump, pause := m.Cell("etcd", "etcd-member-clock-jump"), m.Cell("etcd", "etcd-pause")
	if jump.Played != nil || !strings.Contains(jump.NA, "etcd 0.0.1: ") {
		t.Errorf("the clock story on etcd 0.0.1: played %v, n/a %q; want n/a with the version", jump.Played != nil, jump.NA)
	}
	if pause.Played == nil || pause.NA != "" {
		t.Errorf("etcd-pause on etcd 0.0.1: n/a %q; want it played", pause.NA)
	}
}

// TestClockedPass: a client program on etcd plays its stories that move
// a member's clock on the newest hooked build as well (Debian's etcd,
// its default, takes none); a registered lock, which plays every
// version, and a program without such a story get no extra pass.
func TestClockedPass(t *testing.T) {
	list := catalogueStories(t, "etcd-member-clock-jump", "etcd-pause")
	b, _ := backends.Lookup(clients.EtcdBackend)
	want, err := b.(backends.ClockVersioned).ClockedVersion()
	if err != nil {
		t.Fatalf("%v (make test-deps builds etcd with the clock hook)", err)
	}
	program := subject{Subject: findings.Subject{Name: "node-etcd3", Lock: "etcd", Program: []string{"node", "examples/node-etcd3/client.js"}}, backend: clients.EtcdBackend}
	if got := clockedPass(program, list); got != want {
		t.Errorf("program with a clock story: %q, want %q", got, want)
	}
	if got := clockedPass(program, list[1:]); got != "" {
		t.Errorf("program without a clock story: %q, want none", got)
	}
	own := program
	own.Program = nil
	if got := clockedPass(own, list); got != "" {
		t.Errorf("registered lock: %q, want none (it plays every version)", got)
	}
}

// TestFindingsJobs plays the user's path of sim findings --jobs 2: two
// shard processes at once, each with its log and page under --out, their
// locks merged into --doc. Then the same run interrupted (SIGINT, as
// Ctrl-C) once its shards play: it exits 130, writes no --doc, and
// leaves no process of its shards running.
func TestFindingsJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts python3, redis-server, memcached and PostgreSQL")
	}
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(simMainEnv, "1") // the shards are this binary, run as sim
	tmp := t.TempDir()
	doc, out := filepath.Join(tmp, "findings.md"), filepath.Join(tmp, "runs")
	args := []string{"findings", "--jobs", "2", "--only", "memcached,my-lock", "--examples", examples, "--hunt-runs", "2"}
	code, stdout, stderr := sim(t, append(args, "--doc", doc, "--out", out)...)
	if code != exitOK || !strings.Contains(stdout, "2 lock(s) from 2 shard(s)") || !strings.Contains(stderr, "sim findings: 2 shards in ") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r, err := findings.Load(filepath.Join(tmp, "findings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.Subjects {
		names = append(names, s.Name)
		if len(s.Cells) == 0 || s.Hunt == nil {
			t.Errorf("%s: %d cells, hunt %v", s.Name, len(s.Cells), s.Hunt)
		}
	}
	if slices.Sort(names); strings.Join(names, " ") != "memcached my-lock" || r.Shard != "" {
		t.Errorf("merged page: locks %v, shard %q; want memcached and my-lock, no shard", names, r.Shard)
	}
	for _, f := range []string{"shard-1/log", "shard-2/log", "shard-1/findings.json", "shard-2/runs"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	// Interrupted while its shards play; dealt the locks by the first
	// run's rows' times (--balance): my-lock's row, the longer, to shard
	// 1, where every 2nd lock of --only's order gives shard 1 memcached
	// (checked: without --balance the test fails, planning 2 and 9).
	b := make([]byte, 8)
	rand.Read(b)
	mark := "LOCKSIM_TEST_MARK=" + hex.EncodeToString(b)
	doc2 := filepath.Join(tmp, "again", "findings.md")
	cmd := exec.Command(os.Args[0], append(args, "--doc", doc2, "--out", filepath.Join(tmp, "again-runs"), "--balance", filepath.Join(tmp, "findings.json"))...)
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Each shard says how much it will play once it has read every
	// program's hello and planned, just before it plays.
	playing := func() bool {
		for _, i := range []string{"1", "2"} {
			log, _ := os.ReadFile(filepath.Join(tmp, "again-runs", "shard-"+i, "log"))
			if !strings.Contains(string(log), "story run(s) and hunt(s)") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !playing() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // into their first stories
	planned := func(i string) int {
		log, _ := os.ReadFile(filepath.Join(tmp, "again-runs", "shard-"+i, "log"))
		var locks, runs int
		fmt.Sscanf(string(log), "sim findings: %d lock(s), %d story run(s)", &locks, &runs)
		return runs
	}
	if one, two := planned("1"), planned("2"); one <= two || two == 0 {
		t.Errorf("balanced shards plan %d and %d story runs; want shard 1 the longer (my-lock's row)", one, two)
	}
	if n := len(markedProcs(mark)); !playing() || n < 3 {
		cmd.Process.Kill()
		t.Fatalf("shards playing: %v; %d processes running, want sim and its two shards at least:\n%s", playing(), n, strings.Join(markedProcs(mark), "\n"))
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Errorf("exit after SIGINT: %v, want code %d", err, exitInterrupted)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(markedProcs(mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := markedProcs(mark); len(left) > 0 {
		t.Errorf("left running after SIGINT:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(doc2); err == nil {
		t.Errorf("%s written by an interrupted run", doc2)
	}
}

// TestUnsteadyHunts: a hunt's find whose replays held it fewer than
// hunt.MustBreak times is, at every write, a hunt that found nothing
// steady (the page says why); one that held 2 of 3 stays a find.
func TestUnsteadyHunts(t *testing.T) {
	r := &findings.Report{Subjects: []findings.Subject{
		{Name: "a", Hunt: &findings.Hunt{Baseline: "zookeeper", Found: true, Runs: 1, Summary: "unsafe: lost update", Reproduced: "reproduced 0 of 3", Story: "name: x"}},
		{Name: "b", Hunt: &findings.Hunt{Baseline: "redis", Found: true, Runs: 4, Summary: "unsafe: y", Reproduced: "reproduced 2 of 3"}},
	}}
	unsteadyHunts(r)
	a, b := r.Subjects[0].Hunt, r.Subjects[1].Hunt
	if a.Found || a.Story != "" || a.Unsteady != "reproduced 0 of 3: unsafe: lost update" {
		t.Errorf("0 of 3: found %v, story %q, unsteady %q; want no find, saying why", a.Found, a.Story, a.Unsteady)
	}
	if !b.Found || b.Unsteady != "" {
		t.Errorf("2 of 3: found %v, unsteady %q; want a find", b.Found, b.Unsteady)
	}
}

// catalogueStories are the catalogue's stories of these names.
func catalogueStories(t *testing.T, names ...string) []*scenarios.Scenario {
	t.Helper()
	var list []*scenarios.Scenario
	for _, name := range names {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, sc)
	}
	return list
}
