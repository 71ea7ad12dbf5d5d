package sweep

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// trialOutcome is a made-up trial: counts drawn from its place in the sweep.
func trialOutcome(l, p, t int) Row {
	h := uint64(l*7919+p*104729+t*1299709) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	o := Row{Trials: 1, CriticalSections: 20 + int(h%13), Injected: int(h>>8) % 3, Refused: int(h>>12) % 2}
	each := Trial{Number: t + 1, Seed: h, Schedule: fmt.Sprintf("at %dms: pause 300ms of client %d during its critical section", h%50, 1+h%4),
		Struck: o.Injected, Verdict: "safe", CriticalSections: o.CriticalSections, Summary: "a made-up trial, with a comma", Tries: 1 + int(h>>40)%3}
	if h>>32%9 == 0 {
		// The machine was too slow for this one: no verdict, no counts.
		each.Verdict, each.Struck, each.CriticalSections = "unknown", 0, 0
		return Row{Trials: 1, Unknown: 1, Each: []Trial{each}}
	}
	if h>>20%3 == 0 {
		o.Violated, o.Violations = 1, 1+int(h>>24)%4
		each.Verdict, each.Violated = "unsafe", true
		if h>>28%2 == 0 {
			o.Damaged, each.Damaged = 1, true
		}
	}
	o.Each = []Trial{each}
	return o
}

// playSweep builds the rows a sweep (or one shard of it) would write,
// with made-up trials: one row per lock and point, as Run lays them out.
func playSweep(d Description, s sharding.Shard) []Row {
	p, err := ParseParam(d.Param)
	if err != nil {
		panic(err)
	}
	ttl := 100 * time.Millisecond
	var rows []Row
	for l, lock := range d.Locks {
		for pi, v := range p.Points(d.Points) {
			r := Row{Lock: lock, Param: p.Key, Value: v, Resolved: v.Duration(ttl), TTL: ttl}
			for t := 0; t < d.Trials; t++ {
				if !s.Plays(l, pi, t, d.Points, d.Trials) {
					continue
				}
				r.add(trialOutcome(l, pi, t))
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// throughCSV writes rows as sweep.csv and trials.csv and reads them back.
func throughCSV(t *testing.T, rows []Row) []Row {
	t.Helper()
	var b, tb bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrialsCSV(&tb, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadTrialsCSV(&tb, back); err != nil {
		t.Fatal(err)
	}
	return back
}

func testDescription() Description {
	return Description{Scenario: "gen-pause", Seed: 7, Param: "pause=0.2ttl..3ttl", Points: 4, Trials: 5,
		Locks: []string{"redis", "redis+fenced", "postgres-session"}, TTL: "100ms", Backend: "local"}
}

// shardsOf plays the n shards of d, each through its sweep.csv.
func shardsOf(t *testing.T, d Description, n int) []ShardResult {
	var out []ShardResult
	for i := 1; i <= n; i++ {
		sd := d
		sd.Shard, sd.Shards = i, n
		out = append(out, ShardResult{Dir: fmt.Sprintf("shard%d", i), Desc: sd, Rows: throughCSV(t, playSweep(d, sharding.Shard{I: i, N: n}))})
	}
	return out
}

// TestMergeOfShardsEqualsWholeSweep: the merged rows of N shards are the
// whole sweep's, count for count, with the values as --param gave them;
// the CSVs of both are the same bytes.
func TestMergeOfShardsEqualsWholeSweep(t *testing.T) {
	d := testDescription()
	whole := playSweep(d, sharding.Shard{})
	for _, n := range []int{1, 2, 3, 7, 60} {
		shards := shardsOf(t, d, n)
		// Any order of the directories.
		shards[0], shards[n-1] = shards[n-1], shards[0]
		md, rows, err := Merge(shards)
		if err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
		if !reflect.DeepEqual(rows, whole) {
			t.Fatalf("N=%d: merged rows differ from the whole sweep's:\n got %+v\nwant %+v", n, rows, whole)
		}
		if md.Shard != 0 || md.Shards != 0 || len(md.MergedFrom) != n || md.MergedFrom[0] != "shard1" || md.Seed != d.Seed {
			t.Errorf("N=%d: merged description %+v", n, md)
		}
		var a, b bytes.Buffer
		WriteCSV(&a, rows)
		WriteCSV(&b, whole)
		if a.String() != b.String() {
			t.Errorf("N=%d: merged CSV\n%s\nwhole sweep's\n%s", n, a.String(), b.String())
		}
	}
}

// TestMergeRefuses: shards of different sweeps, a shard missing or given
// twice, a whole sweep, rows that do not fit: one line naming the
// directory.
func TestMergeRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape func(s []ShardResult) []ShardResult
		want  string
	}{
		{"missing", func(s []ShardResult) []ShardResult { return s[:2] }, "shard 3/3 missing: the directories given hold 1/3 in shard1, 2/3 in shard2"},
		{"twice", func(s []ShardResult) []ShardResult { s[2] = s[1]; s[2].Dir = "again"; return s }, "again: shard 2/3 again (shard2 is shard 2/3 too)"},
		{"seed", func(s []ShardResult) []ShardResult { s[1].Desc.Seed = 8; return s }, `shard2: seed "8", but shard1 has "7"`},
		{"locks", func(s []ShardResult) []ShardResult { s[2].Desc.Locks = []string{"redis"}; return s }, `shard3: locks "redis", but shard1`},
		{"servers", func(s []ShardResult) []ShardResult {
			s[1].Desc.Servers = []Servers{{Lock: "redsync", Backend: "redis", Nodes: 1}}
			return s
		}, `shard2: servers "redsync on 1 redis node(s)", but shard1`},
		{"N", func(s []ShardResult) []ShardResult { s[1].Desc.Shards = 4; return s }, `shard2: shards "4", but shard1 has "3"`},
		{"whole", func(s []ShardResult) []ShardResult { s[1].Desc.Shard, s[1].Desc.Shards = 0, 0; return s }, "shard2: not a shard"},
		{"rows", func(s []ShardResult) []ShardResult { s[1].Rows = s[1].Rows[1:]; return s }, "shard2: sweep.csv has 11 rows, want 12"},
		{"value", func(s []ShardResult) []ShardResult { s[2].Rows[1].Resolved++; return s }, "shard3: sweep.csv row 2 is pause="},
		{"none", func(s []ShardResult) []ShardResult { return nil }, "name the shards' directories"},
		{"trial twice", func(s []ShardResult) []ShardResult {
			s[1].Rows[0].Each = append(s[1].Rows[0].Each, s[0].Rows[0].Each[0])
			return s
		}, "is in two shards' trials.csv"},
		{"trial by no shard", func(s []ShardResult) []ShardResult {
			s[0].Rows[5].Each = s[0].Rows[5].Each[1:]
			return s
		}, "redis+fenced at pause=113.333ms: trial 3 is in no shard's trials.csv"},
	} {
		_, _, err := Merge(c.shape(shardsOf(t, testDescription(), 3)))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// TestCSVRoundTrip: ReadCSV reads back what WriteCSV wrote, every count
// and the point, durations and drift rates alike.
func TestCSVRoundTrip(t *testing.T) {
	rows := playSweep(testDescription(), sharding.Shard{})
	rows = append(rows, Row{Lock: "redlock", Param: "drift", Value: Value{X: 1.5}, Resolved: 1, TTL: 50 * time.Millisecond,
		Trials: 9, Violated: 3, Damaged: 2, Violations: 4, CriticalSections: 300, Refused: 1, Injected: 9})
	back := throughCSV(t, rows)
	if len(back) != len(rows) {
		t.Fatalf("%d rows back, want %d", len(back), len(rows))
	}
	for i, r := range rows {
		b := back[i]
		if r.Value.RelTTL {
			// The file has the duration it resolved to.
			r.Value = Value{X: float64(r.Resolved)}
		}
		if !reflect.DeepEqual(b, r) {
			t.Errorf("row %d back as\n%+v, want\n%+v", i+1, b, r)
		}
	}
	var first, second bytes.Buffer
	WriteCSV(&first, rows)
	WriteCSV(&second, back)
	if first.String() != second.String() {
		t.Errorf("written again, the CSV differs:\n%s\n%s", first.String(), second.String())
	}
}

// TestReadCSVErrors: a malformed sweep.csv is one line naming the line.
func TestReadCSVErrors(t *testing.T) {
	good := lines(t, WriteCSV, playSweep(testDescription(), sharding.Shard{})[:3])
	header := good[0]
	old := strings.TrimSuffix(header, ","+strings.Join(SpreadHeader, ","))
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"empty", nil, "line 1: empty file"},
		{"without the spread", []string{old, strings.Join(strings.Split(good[1], ",")[:len(Header)], ",")}, ""},
		{"old header", []string{strings.TrimSuffix(old, ",violations,trials_unknown"), good[1]}, "line 1: no violations column"},
		{"no unknown column", []string{strings.TrimSuffix(old, ",trials_unknown"), good[1]}, "line 1: no trials_unknown column"},
		{"short record", []string{header, good[1], "redis,pause,20ms", good[3]}, "line 3"},
		{"bad count", []string{header, good[1], good[2], bad(good[3], 5, "x")}, `line 4: trials: expected a count, got "x"`},
		{"bad ttl", []string{header, bad(good[1], 4, "soon")}, `line 2: ttl: expected a duration, got "soon"`},
		{"bad value", []string{header, good[1], bad(good[2], 2, "7 apples")}, `line 3: value: expected a duration`},
		{"too many violated", []string{header, bad(good[1], 6, "99")}, "line 2: 5 trials (1 unknown), 99 violated"},
		{"too many unknown", []string{header, bad(good[1], 19, "6")}, "line 2: 5 trials (6 unknown)"},
		{"unknown param", []string{header, bad(good[1], 1, "speed")}, `line 2: param: unknown key "speed"`},
	} {
		_, err := ReadCSV(strings.NewReader(strings.Join(c.lines, "\n")))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// bad replaces field i of a CSV line.
// lines are what write writes of rows, line by line.
func lines(t *testing.T, write func(io.Writer, []Row) error, rows []Row) []string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, rows); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// bad is line with its field i (counted from the end when negative) set
// to v.
func bad(line string, i int, v string) string {
	f := strings.Split(line, ",")
	if i < 0 { // from the end
		i += len(f)
	}
	f[i] = v
	return strings.Join(f, ",")
}

// TestRatesLeaveUnknownTrialsOut: a trial without a verdict is in no rate,
// neither as violated nor as clean.
func TestRatesLeaveUnknownTrialsOut(t *testing.T) {
	r := Row{Trials: 10, Unknown: 4, Violated: 3, Damaged: 6}
	if r.Decided() != 6 || r.Rate() != 0.5 || r.DamageRate() != 1 {
		t.Fatalf("10 trials, 4 unknown, 3 violated, 6 damaged: decided %d, rate %v, damage rate %v; want 6, 0.5, 1",
			r.Decided(), r.Rate(), r.DamageRate())
	}
	if back := throughCSV(t, []Row{{Lock: "redis", Param: "pause", Value: Value{X: 1e8}, Resolved: 1e8, TTL: 1e8, Trials: 5, Unknown: 5}}); back[0].Unknown != 5 || !back[0].NoData() {
		t.Fatalf("a point of unknown trials read back as %+v", back[0])
	}
}

// TestNoDataIsNotARateOfZero: a point whose every trial was unknown has
// its rates left empty in sweep.csv; a point with one decided trial has
// them all.
func TestNoDataIsNotARateOfZero(t *testing.T) {
	var b bytes.Buffer
	rows := []Row{
		{Lock: "redis", Param: "pause", Resolved: 3e8, TTL: 1e8, Trials: 5, Unknown: 5},
		{Lock: "redis", Param: "pause", Resolved: 2e8, TTL: 1e8, Trials: 5, Unknown: 4},
	}
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rates := []string{"rate", "rate_low95", "rate_high95", "violations_per_1000_cs", "damage_rate", "damage_low95", "damage_high95"}
	for _, name := range rates {
		i := slices.Index(Header, name)
		if got := recs[1][i]; got != "" {
			t.Errorf("no decided trial: %s = %q, want empty", name, got)
		}
		if got := recs[2][i]; got == "" {
			t.Errorf("one decided trial: %s empty", name)
		}
	}
}

// TestUndecided: more than a tenth of the trials unknown is too many.
func TestUndecided(t *testing.T) {
	for _, c := range []struct {
		unknown []int
		tooMany bool
	}{
		{[]int{0, 0}, false}, {[]int{1, 0}, false}, {[]int{1, 1}, false}, {[]int{2, 1}, true}, {[]int{10, 10}, true},
	} {
		var rows []Row
		for _, u := range c.unknown {
			rows = append(rows, Row{Trials: 10, Unknown: u})
		}
		u, n, tooMany := Undecided(rows)
		if u != c.unknown[0]+c.unknown[1] || n != 20 || tooMany != c.tooMany {
			t.Errorf("unknown %v of 2x10 trials: %d, %d, %v; want too many %v", c.unknown, u, n, tooMany, c.tooMany)
		}
	}
}

// TestDescriptionSaysWhatEachLockRanOn: sweep.json records, for each
// lock, the servers it ran on, as Variant resolves them.
func TestDescriptionSaysWhatEachLockRanOn(t *testing.T) {
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	d := Describe(sc, Options{Locks: []string{"redsync", "redis", "postgres-session+fenced"}})
	want := "redsync on 5 redis node(s), redis on 1 redis node(s), postgres-session+fenced on postgres (fence postgres)"
	if got := d.serversLine(); got != want {
		t.Errorf("servers: %q, want %q", got, want)
	}
}

// TestReadTrialsCSVErrors: a malformed trials.csv is one line naming the
// line and the field.
func TestReadTrialsCSVErrors(t *testing.T) {
	good := lines(t, WriteTrialsCSV, playSweep(testDescription(), sharding.Shard{})[:2])
	header := good[0]
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"empty", nil, "line 1: empty file"},
		{"old header", []string{strings.TrimSuffix(header, ",planned_ttl,struck_ttl,lead_ttl,overrun_ttl,tries"), good[1]}, "line 1: header"},
		{"header without tries", []string{strings.TrimSuffix(header, ",tries"), good[1]}, "line 1: header"},
		{"no try", []string{header, bad(good[1], -1, "0")}, `line 2: tries: expected 1 or more, got 0`},
		{"bad struck", []string{header, bad(good[1], 13, "long")}, `_ttl: expected a multiple of the TTL or nothing, got "long"`},
		{"no such row", []string{header, bad(good[1], 0, "zookeeper")}, "line 2: lock zookeeper at pause="},
		{"bad seed", []string{header, good[1], bad(good[2], 4, "-1")}, `line 3: seed: expected an unsigned integer, got "-1"`},
		{"bad verdict", []string{header, bad(good[1], 7, "fine")}, `line 2: verdict: expected safe, unsafe, leaked, hung or unknown, got "fine"`},
		{"bad flag", []string{header, bad(good[1], 8, "yes")}, `line 2: violated: expected 0 or 1, got "yes"`},
	} {
		fresh := playSweep(testDescription(), sharding.Shard{})[:2]
		for i := range fresh {
			fresh[i].Each = nil
		}
		err := ReadTrialsCSV(strings.NewReader(strings.Join(c.lines, "\n")), fresh)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
}
