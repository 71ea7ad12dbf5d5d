package findings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/cost"
)

// TestMeaning: what a subject's cells and hunt mean is said from them:
// the stories where it did worse than its reference, by name; the hunt's
// finding; nothing claimed that the runs did not show.
func TestMeaning(t *testing.T) {
	worse := Subject{Name: "p", Program: []string{"p"}, Cells: []Cell{{Story: "a", Kind: "finding"}, {Story: "b", Kind: "match"}, {Story: "c", Kind: "na"}},
		Hunt: &Hunt{Found: true, Runs: 3, Summary: "unsafe: lost update", Baseline: "redlock"}}
	if m := worse.Meaning(); !strings.Contains(m, "Of 2 stories played, it ended worse than the lock it stands in for on 1: a.") ||
		!strings.Contains(m, "1 story could not be played") || !strings.Contains(m, "with redlock (the lock it stands in for) as its baseline, found a schedule on which it ends worse than that lock in 3 candidate(s): unsafe: lost update") {
		t.Errorf("meaning %q", m)
	}
	fine := Subject{Name: "redis", Cells: []Cell{{Story: "a", Kind: "match"}}, Hunt: &Hunt{Runs: 9, Seconds: 40}}
	if m := fine.Meaning(); strings.Contains(m, "worse") || !strings.Contains(m, "every one ended as the story") || !strings.Contains(m, "found nothing in 9") {
		t.Errorf("meaning %q", m)
	}
	own := Subject{Name: "redlock", Cells: []Cell{{Story: "a", Kind: "match"}}, Hunt: &Hunt{Found: true, Runs: 2, Summary: "unsafe"}}
	if m := own.Meaning(); strings.Contains(m, "baseline") || !strings.Contains(m, "found a schedule that breaks it in 2 candidate(s)") {
		t.Errorf("meaning %q", m)
	}
}

// TestReplaceKeepsTheOthers: --only refreshes its subjects in place and
// keeps the others; locksim's own locks come first.
func TestReplaceKeepsTheOthers(t *testing.T) {
	r := &Report{Subjects: []Subject{{Name: "redis", Date: "old"}, {Name: "kazoo", Program: []string{"k"}, Date: "old"}}}
	r.Replace([]Subject{{Name: "kazoo", Program: []string{"k"}, Date: "new"}, {Name: "etcd", Date: "new"}})
	var got []string
	for _, s := range r.Subjects {
		got = append(got, s.Name+":"+s.Date)
	}
	if strings.Join(got, " ") != "etcd:new redis:old kazoo:new" {
		t.Errorf("subjects %v", got)
	}
}

// TestLoadRefusesAFileLocksimDidNotWrite: a findings.json of the user's
// is never read as ours (nor overwritten); a missing one is an empty
// report; one locksim wrote reads back.
func TestLoadRefusesAFileLocksimDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	if r, err := Load(filepath.Join(dir, "none.json")); err != nil || len(r.Subjects) != 0 {
		t.Fatalf("missing file: %v %v", r, err)
	}
	theirs := filepath.Join(dir, "theirs.json")
	os.WriteFile(theirs, []byte(`{"subjects": []}`), 0o644)
	if _, err := Load(theirs); err == nil || !strings.Contains(err.Error(), "not a findings.json locksim wrote") {
		t.Errorf("a user's file: %v", err)
	}
	ours := filepath.Join(dir, "ours.json")
	b, _ := (&Report{Subjects: []Subject{{Name: "redis"}}}).JSON()
	os.WriteFile(ours, b, 0o644)
	if r, err := Load(ours); err != nil || len(r.Subjects) != 1 {
		t.Errorf("ours: %v %v", r, err)
	}
}

// TestRendering: the page gives each cell's command and the found story,
// and the HTML escapes what it shows.
func TestRendering(t *testing.T) {
	r := &Report{Command: "bin/sim findings", Subjects: []Subject{{Name: "node-redlock (redlock)", Lock: "redlock", Program: []string{"node", "x.js"}, About: "a <b>", Servers: "redis",
		Cells: []Cell{{Story: "s", Kind: "finding", Text: "finding: x | y", Command: "bin/sim run s --client-cmd \"node x.js\""}},
		Hunt:  &Hunt{Found: true, Runs: 2, Summary: "unsafe", Story: "name: found\n", Command: "bin/sim hunt redlock"}}}}
	md := string(r.Markdown())
	for _, want := range []string{"[node-redlock (redlock)](#node-redlock-redlock)", "🔎 finding: x \\| y", "`bin/sim run s --client-cmd \"node x.js\"`", "```yaml\nname: found\n```", "Hunt: `bin/sim hunt redlock`: found after 2"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	h, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "a &lt;b&gt;") || !strings.Contains(string(h), `id="node-redlock-redlock"`) || !strings.Contains(string(h), `class="finding"`) {
		t.Errorf("HTML:\n%s", h)
	}
}

// TestHuntWord: a differential hunt's column says what it is worse than
// and how in one line (the verdict, under the schedule's faults when
// kept), or that nothing was; a reference's hunt says found, and the schedule's
// faults where it knows them; a find says how often it reproduced, a
// hunt that found nothing says nothing of it.
func TestHuntWord(t *testing.T) {
	for _, c := range []struct {
		h    Hunt
		want string
	}{
		{Hunt{Baseline: "redis", Runs: 40}, "nothing worse than redis in 40 candidates"},
		{Hunt{Baseline: "redis", Runs: 4, Found: true}, "worse than redis: a worse verdict (4 candidates)"},
		{Hunt{Baseline: "zookeeper", Runs: 7, Found: true, Summary: "leaked: client 1's release never returned within 30.5s",
			Schedule: "drop on client 1 (links A) once client 1 is granted"},
			"worse than zookeeper: leaked under drop on client 1 (links A) once client 1 is granted (7 candidates)"},
		{Hunt{Baseline: "redis", Runs: 1, Found: true, Summary: "unsafe: clients 1 and 2 both held lock L"}, "worse than redis: unsafe (1 candidates)"},
		{Hunt{Runs: 2, Found: true}, "found (2 candidates)"},
		{Hunt{Runs: 2, Found: true, Schedule: "clock-jump on A (+315ms; jump 0.63 TTL) once client 1 is granted"}, "found: clock-jump on A (+315ms; jump 0.63 TTL) once client 1 is granted (2 candidates)"},
		{Hunt{Runs: 40}, "nothing in 40 candidates"},
		{Hunt{Runs: 2, Found: true, Schedule: "clock-jump on A (+315ms) once client 1 is granted", ToldBy: "redis-clock-jump"},
			"the schedule of redis-clock-jump: clock-jump on A (+315ms) once client 1 is granted (2 candidates)"},
		{Hunt{Runs: 2, Found: true, Schedule: "latency on client 1 (links A)", Untold: true},
			"a schedule no catalogue story tells: latency on client 1 (links A) (2 candidates)"},
		{Hunt{Baseline: "redis", Runs: 4, Found: true, Summary: "unsafe: x", Reproduced: "reproduced 2 of 3 as it tells (1 more unsafe by another path)"},
			"worse than redis: unsafe (4 candidates); reproduced 2 of 3 as it tells (1 more unsafe by another path)"},
		{Hunt{Baseline: "redis", Runs: 40, Reproduced: "reproduced 0 of 3"}, "nothing worse than redis in 40 candidates"},
		{Hunt{Baseline: "zookeeper", Runs: 1, Unsteady: "reproduced 0 of 3: unsafe: lost update on L"},
			"nothing steadily worse than zookeeper in 1 candidates (one find reproduced 0 of 3: not counted)"},
		{Hunt{Runs: 5, Unsteady: "reproduced 1 of 3: unsafe: x"}, "nothing steady in 5 candidates (one find reproduced 1 of 3: not counted)"},
	} {
		if got := c.h.Word(false); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
}

// TestServerVersions: a subject whose stories ran on several versions of
// its servers names the version in every sentence about them: its
// servers, each story's row, the hunt's; a story whose bug a later
// version fixed says so, with the runs that show it and how it ended
// before; a story that ended otherwise on the fixed version says nothing
// of a fix.
func TestServerVersions(t *testing.T) {
	s := Subject{Name: "etcd-lock-service", Lock: "etcd-lock-service", Servers: "etcd",
		Cells: []Cell{
			{Story: "w", Kind: "match", Text: "unsafe, as expected", Server: "etcd 3.4.23"},
			{Story: "p", Kind: "match", Text: "unsafe, as expected", Server: "etcd 3.4.23"},
			{Story: "w", Kind: "match", Text: "safe, as expected: fixed in etcd 3.5+, as the run on 3.6.17 shows", Server: "etcd 3.6.17", Fixed: "etcd 3.5",
				Command: "bin/sim run w --server-version etcd=3.6.17"},
			{Story: "p", Kind: "match", Text: "unsafe, as expected", Server: "etcd 3.6.17"},
			{Story: "w", Kind: "match", Text: "safe, as expected: fixed in etcd 3.5+, as the run on 3.7.3 shows", Server: "etcd 3.7.3", Fixed: "etcd 3.5"},
			{Story: "p", Kind: "finding", Text: "finding: unsafe", Server: "etcd 3.7.3"},
		},
		Hunt: &Hunt{Found: true, Runs: 9, Summary: "unsafe", Command: "bin/sim hunt etcd-lock-service", Server: "etcd 3.4.23"}}
	m := s.Meaning()
	for _, want := range []string{
		"Of 6 stories played on etcd 3.4.23, 3.6.17 and 3.7.3, it ended worse than the lock it stands in for on 1: p on etcd 3.7.3.",
		"w's bug is fixed in etcd 3.5+, as the runs on 3.6.17 and 3.7.3 show (it ended unsafe on etcd 3.4.23).",
		"The hunt (on etcd 3.4.23) found a schedule",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("meaning lacks %q:\n%s", want, m)
		}
	}
	if strings.Contains(m, "p's bug") {
		t.Errorf("meaning says p was fixed:\n%s", m)
	}
	md := string((&Report{Subjects: []Subject{s}}).Markdown())
	for _, want := range []string{
		"| [etcd-lock-service](#etcd-lock-service) |  | 6 | 1 | 0 |",
		", on etcd 3.4.23, 3.6.17 and 3.7.3; played",
		"| w on etcd 3.6.17 | ✅ safe, as expected: fixed in etcd 3.5+, as the run on 3.6.17 shows | `bin/sim run w --server-version etcd=3.6.17` |",
		"| p on etcd 3.4.23 | ✅ unsafe, as expected |",
		"Hunt on etcd 3.4.23: `bin/sim hunt etcd-lock-service`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	h, err := (&Report{Subjects: []Subject{s}}).HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>w on etcd 3.7.3</td>", "on etcd 3.4.23, 3.6.17 and 3.7.3; played", "Hunt on etcd 3.4.23:"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// A subject of servers with one version reads as before.
	one := Subject{Name: "redis", Servers: "redis", Cells: []Cell{{Story: "a", Kind: "match"}}}
	if one.ServersLine() != "redis" || strings.Contains(one.Meaning(), " on ") {
		t.Errorf("one version: %q, %q", one.ServersLine(), one.Meaning())
	}
}

// TestBusyRowKeepsTheIdleOne: a subject played above its machine's cores
// is marked on the page and never replaces a row played idle; an idle
// one replaces a busy one, and a row without a recorded load is replaced
// as before.
func TestBusyRowKeepsTheIdleOne(t *testing.T) {
	idle := Subject{Name: "redis", Date: "2026-12-01", Load: 0.7, Cores: 2}
	busy := Subject{Name: "redis", Date: "2026-12-03", Load: 7.9, Cores: 2}
	r := &Report{Subjects: []Subject{idle}}
	if kept := r.Replace([]Subject{busy}); len(kept) != 1 || !strings.Contains(kept[0], "played at load 7.9 on 2 cores; the page keeps its idle row of 2026-12-01") || r.Subjects[0].Date != "2026-12-01" {
		t.Fatalf("kept %v, row %+v: want the idle row kept", kept, r.Subjects[0])
	}
	r = &Report{Subjects: []Subject{busy}}
	if kept := r.Replace([]Subject{idle}); len(kept) != 0 || r.Subjects[0].Date != "2026-12-01" {
		t.Fatalf("kept %v, row %+v: want the idle row in", kept, r.Subjects[0])
	}
	r = &Report{Subjects: []Subject{{Name: "redis", Date: "2026-11-30"}}}
	if kept := r.Replace([]Subject{busy}); len(kept) != 0 || r.Subjects[0].Date != "2026-12-03" {
		t.Fatalf("kept %v: a row with no load recorded is replaced", kept)
	}
	if w := busy.LoadWords(); !strings.Contains(w, "BUSY") {
		t.Errorf("busy row's words %q", w)
	}
	if w := idle.LoadWords(); w != " at load 0.7 (2 cores)" {
		t.Errorf("idle row's words %q", w)
	}
	if w := (Subject{}).LoadWords(); w != "" {
		t.Errorf("a row with no load says %q", w)
	}
	md := string((&Report{Subjects: []Subject{busy}}).Markdown())
	if !strings.Contains(md, "at load 7.9 on 2 cores: BUSY") {
		t.Errorf("the page does not mark the busy row:\n%s", md)
	}
}

// TestCostLines: the page gives each lock the cost run's figures, read
// from a cost.json (testdata/cost.json, a run of redis and redlock whose
// etcd row failed): redis's acquire+release 150 / 300 µs, 3.0× its
// floor, 4321 locks/s; redlock a line per persistence; where they came
// from (the run's command and date); and says "not measured" for a lock
// the run did not measure, one whose row failed, a client program, and
// every lock of a page that carries no cost run.
func TestCostLines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res cost.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	subjects := []Subject{{Name: "redis", Lock: "redis"}, {Name: "redlock", Lock: "redlock"}, {Name: "etcd", Lock: "etcd"},
		{Name: "zookeeper", Lock: "zookeeper"}, {Name: "node-redlock (redis)", Lock: "redis", Program: []string{"node", "examples/node-redlock/client.js"}}}
	bare := &Report{Subjects: subjects}
	r := &Report{Subjects: subjects}
	r.SetCost(&res)
	if r.Cost.Marks != nil || res.Marks == nil {
		t.Errorf("SetCost kept the chart's marks, or dropped the run's own")
	}
	md := string(r.Markdown())
	for _, want := range []string{
		"Cost figures from `bin/sim cost --locks redis,redlock --duration 300ms`, run 2026-12-04 09:00 on 2 cores.",
		"| 150 / 300 µs (3.0× / 3.0×), 4321/s |",
		"| redlock/none 600 / 1250 µs (12.0× / 12.5×), 1017/s<br>redlock/always 1700 / 5600 µs (34.0× / 56.0×), 428/s |",
		"Cost of redis: one acquire and release 150 µs at the median, 300 µs at p99, one client uncontended: 3.0× and 3.0× the floor measured in the same run (one redis PING, 50 / 100 µs); 4321 locks/s with 4 clients contending for one lock. From `bin/sim cost --locks redis,redlock --duration 300ms`, run 2026-12-04 09:00 on 2 cores.",
		"Cost of redlock/always (persistence always): one acquire and release 1700 µs at the median, 5600 µs at p99",
		"Cost: not measured: the cost run did not measure lock etcd (sim cost --locks etcd does).",
		"Cost: not measured: the cost run did not measure lock zookeeper",
		"Cost: not measured: sim cost times locksim's own Go locks, not a client program's library.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(md, "| not measured |"); n != 3 {
		t.Errorf("%d table cells say not measured, want 3 (etcd, zookeeper, node-redlock)", n)
	}
	h, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "<td>150 / 300 µs (3.0× / 3.0×), 4321/s</td>") || strings.Contains(string(h), "`bin/sim") {
		t.Errorf("findings.html lacks redis's cost cell, or shows Markdown's backticks")
	}
	bmd := string(bare.Markdown())
	if strings.Contains(bmd, "Cost figures from") || strings.Count(bmd, "Cost: not measured: the page carries no sim cost run") != len(subjects)-1 {
		t.Errorf("a page without a cost run:\n%s", bmd)
	}
	busy := res
	busy.Load = 9.6
	r.SetCost(&busy)
	if src := r.CostSource(); !strings.HasSuffix(src, "run 2026-12-04 09:00 at load 9.6 on 2 cores: BUSY, its figures are not an idle machine's") {
		t.Errorf("a run on a busy machine: %q", src)
	}
	// The page's JSON keeps the run, so that a refresh renders it again.
	j, _ := r.JSON()
	var back Report
	if err := json.Unmarshal(j, &back); err != nil || back.Cost == nil || back.Cost.Rows[0].AcquireRelease.P50 != 150*time.Microsecond {
		t.Errorf("findings.json does not keep the cost run: %v", err)
	}
}
