package matrix

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestMatrixClientProgramNA: with a client program, a story that writes to
// the protected storage is n/a when the program's hello does not cover it
// (protocol v1 has no writes) and played when it does (v2, storage mode
// plain); a story without one is played; a counterfactual that changes
// the lock to one the program does not implement is skipped.
func TestMatrixClientProgramNA(t *testing.T) {
	var list []*scenarios.Scenario
	for _, name := range []string{"redlock-clock-jump", "redlock-pause-after-acquire", "redlock-pause-during-acquire"} {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, sc)
	}
	argv := []string{"node", "client.js"}
	v1 := protocol.Hello{Protocol: 1, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "extend"}}
	v2 := protocol.Hello{Protocol: 2, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "extend", "write"}, StorageModes: []string{"plain"}}
	for _, tc := range []struct {
		name  string
		hello *protocol.Hello
		na    string
	}{{"Go worker", nil, ""}, {"v1", &v1, "protocol v1"}, {"v2", &v2, ""}} {
		var program func(*scenarios.Scenario) error
		if tc.hello != nil {
			h := *tc.hello
			program = func(sc *scenarios.Scenario) error { return runner.ClientProgramProblem(sc, argv, h) }
		}
		m := Plan([]string{"redlock"}, list, t.TempDir(), program)
		jump, pause := m.Cell("redlock", "redlock-clock-jump"), m.Cell("redlock", "redlock-pause-after-acquire")
		if jump.NA != "" || jump.Played == nil {
			t.Errorf("%s: redlock-clock-jump is n/a (%s), want it played", tc.name, jump.NA)
		}
		if tc.na == "" && pause.NA != "" || tc.na != "" && !strings.Contains(pause.NA, tc.na) {
			t.Errorf("%s: redlock-pause-after-acquire n/a = %q, want n/a saying %q", tc.name, pause.NA, tc.na)
		}
		if (jump.Ref != nil) != (tc.hello != nil) || (jump.Ref != nil && (jump.Ref.Lock != "redlock" || len(jump.Ref.ClientCmd) > 0)) {
			t.Errorf("%s: redlock-clock-jump's reference %+v: a client program's cell is judged against locksim's redlock, the Go worker's by its story", tc.name, jump.Ref)
		}
		during := m.Cell("redlock", "redlock-pause-during-acquire")
		switch {
		case tc.hello == nil && (during.CFSkipped != "" || during.Played.Counterfactual == nil):
			t.Errorf("%s: redlock-pause-during-acquire's counterfactual skipped (%s), want it played", tc.name, during.CFSkipped)
		case tc.name == "v2" && (!strings.Contains(during.CFSkipped, "lock redlock-no-validity") || during.Played.Counterfactual != nil || during.CFChangesLock):
			t.Errorf("%s: redlock-pause-during-acquire's counterfactual skipped %q (changes lock %v), want skipped for its lock redlock-no-validity", tc.name, during.CFSkipped, during.CFChangesLock)
		}
	}
}

// TestPlayRecordsEachCell plays a made-up matrix with a fake play (no
// server starts): each cell records what its run came to (a verdict and
// its counterfactual's, a machine too busy, a story that did not happen,
// a harness failure), n/a cells are not played, the cells judged by their
// story run first, lock by lock, and once the context ends the cells left
// are not run.
func TestPlayRecordsEachCell(t *testing.T) {
	var list []*scenarios.Scenario
	for _, name := range []string{"redis-ttl-expiry", "redis-unsafe-release", "postgres-idle-timeout"} {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		list = append(list, sc)
	}
	dir := t.TempDir()
	m := Plan([]string{"redis", "redis-plain-del"}, list, dir, nil)
	if c := m.Cell("redis", "postgres-idle-timeout"); c.NA == "" || c.Played != nil {
		t.Errorf("a PostgreSQL story with a Redis lock: n/a %q", c.NA)
	}
	// redis is the lock redis-unsafe-release's counterfactual plays (its
	// only change): the cell plays that counterfactual, expected safe.
	if c := m.Cell("redis", "redis-unsafe-release"); c.AsCounterfactual == "" || !c.Played.IsCounterfactual || c.Expected != checker.Safe || c.Ref != nil {
		t.Errorf("redis-unsafe-release with redis: as its counterfactual %q, expected %s, ref %v", c.AsCounterfactual, c.Expected, c.Ref)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var order []string
	play := func(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
		order = append(order, sc.Lock+"/"+filepath.Base(o.Out))
		switch len(order) {
		case 1:
			return &runner.Outcome{Expected: "unsafe", Check: checker.Result{Verdict: "unsafe"},
				Counterfactual: &runner.Counterfactual{Verdict: "safe", Flipped: true}}, nil
		case 2:
			return nil, &runner.StoryError{Step: 4, Claimed: "client 1's release ends ok", Saw: "refused (not-held)"}
		case 3:
			return &runner.Outcome{Expected: "unsafe", Check: checker.Result{Verdict: checker.Unknown}, Machine: &history.Machine{Busy: "client 2 did not run for 80ms"}}, nil
		}
		cancel()
		return nil, errors.New("server would not\nstart")
	}
	var progress []int
	m.Play(ctx, play, runner.Options{Seed: 1}, func(n, total int, c *Cell) { progress = append(progress, n, total) })
	if want := "redis/redis-ttl-expiry redis/redis-unsafe-release redis-plain-del/redis-unsafe-release redis-plain-del/redis-ttl-expiry"; strings.Join(order, " ") != want {
		t.Errorf("played %v, want %s", order, want)
	}
	if want := []int{1, 4, 2, 4, 3, 4, 4, 4}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	for _, c := range []struct {
		lock, scenario, kind, text string
	}{
		{"redis", "redis-ttl-expiry", KindMatch, "unsafe, as expected; cf safe"},
		{"redis", "redis-unsafe-release", KindStory, "story did not happen: step 4 (client 1's release ends ok): refused (not-held)"},
		{"redis-plain-del", "redis-unsafe-release", KindUnknown, "unknown (machine too slow)"},
		{"redis-plain-del", "redis-ttl-expiry", KindError, "not run (interrupted)"},
		{"redis", "postgres-idle-timeout", KindNA, "n/a: scenario postgres-idle-timeout uses a postgres lock; redis is a redis lock"},
	} {
		cell := m.Cell(c.lock, c.scenario)
		if cell.Kind() != c.kind || cell.Text(0) != c.text {
			t.Errorf("%s with %s: %s %q, want %s %q", c.scenario, c.lock, cell.Kind(), cell.Text(0), c.kind, c.text)
		}
	}
	if f := m.Failed(); f != nil {
		t.Errorf("an interrupted cell is not a failed one: %s with %s", f.Scenario, f.Lock)
	}

	// Not interrupted, the harness failure is the cell's error, in one line.
	m = Plan([]string{"redis"}, list[:1], dir, nil)
	m.Play(context.Background(), func(context.Context, *scenarios.Scenario, runner.Options) (*runner.Outcome, error) {
		return nil, errors.New("server would not\nstart")
	}, runner.Options{}, nil)
	if f := m.Failed(); f == nil || f.Err != "server would not start" || f.Kind() != KindError {
		t.Errorf("a harness failure: %+v", f)
	}
}

// TestTextCutsAtAWordsEnd: a reason too long for the terminal is cut at
// the end of its last whole word, with an ellipsis; a single long word
// where it must.
func TestTextCutsAtAWordsEnd(t *testing.T) {
	const prefix = "story did not happen: "
	for _, c := range []struct {
		story string
		width int
		want  string
	}{
		{"client 1's release ends ok", 0, "client 1's release ends ok"},
		{"client 1's release ends ok", 26, "client 1's release ends ok"},
		{"client 1's release ends ok", 15, "client 1's…"}, // "client 1's rel" cut in a word
		{"client 1's release ends ok", 12, "client 1's…"}, // the cut falls on the space
		{"step 4: refused (not-held)", 12, "step 4…"},     // no colon before the ellipsis
		{"supercalifragilistic", 8, "superca…"},           // no word end to cut at
	} {
		if got := (&Cell{Story: c.story}).Text(c.width); got != prefix+c.want {
			t.Errorf("Text(%d) of %q = %q, want %q", c.width, c.story, got, prefix+c.want)
		}
	}
}

// TestJudgedCells: a cell whose lock stands in for the story's is judged
// against the reference lock played on the same story: worse is a
// finding, as good matches and names the step where the two parted. The
// reference's own cell is that run, played first and reused; a reference
// not in the table is played once, through Options.Reference.
func TestJudgedCells(t *testing.T) {
	sc, err := scenarios.Find("redis-ttl-expiry")
	if err != nil {
		t.Fatal(err)
	}
	departed := &runner.StoryError{Step: 6, Claimed: "client 1's release ends refused (not-held)", Saw: "ok"}
	verdicts := map[string]checker.Verdict{"redis": checker.Safe, "redislock": checker.Unsafe, "redis-plain-del": checker.Safe}
	var order []string
	var refsAsked []string
	play := func(_ context.Context, played *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
		order = append(order, played.Lock)
		if played.Lock != "redis" && !o.Departures {
			t.Errorf("%s played without Departures: a judged cell plays its story to the end", played.Lock)
		}
		res := &runner.Outcome{Scenario: played, Dir: o.Out, Expected: played.Expected, Check: checker.Result{Verdict: verdicts[played.Lock]}}
		if played.Lock == "redis-plain-del" {
			res.Departed = departed
		}
		if o.Reference != nil {
			refsAsked = append(refsAsked, o.Reference.Lock)
			res.JudgeAgainst(&runner.Outcome{Scenario: o.Reference, Check: checker.Result{Verdict: verdicts[o.Reference.Lock]}})
		}
		return res, nil
	}
	m := Plan([]string{"redislock", "redis-plain-del", "redis"}, []*scenarios.Scenario{sc}, t.TempDir(), nil)
	m.Play(context.Background(), play, runner.Options{}, nil)
	if want := "redis redislock redis-plain-del"; strings.Join(order, " ") != want || len(refsAsked) != 0 {
		t.Errorf("played %v, references asked %v; want %s, the reference's own cell reused", order, refsAsked, want)
	}
	for _, c := range []struct{ lock, kind, text string }{
		{"redis", KindMatch, "safe, NOT unsafe"}, // the reference is judged by its story
		{"redislock", KindFinding, "finding: lock redislock ended unsafe where the reference redis ended safe: a finding about redislock"},
		{"redis-plain-del", KindMatch, "safe, as good as the reference redis; lock redis-plain-del did as well as the reference redis: both ended safe; at step 6 the story says client 1's release ends refused (not-held): lock redis-plain-del shows ok, the reference as told"},
	} {
		cell := m.Cell(c.lock, sc.Name)
		if c.kind == KindMatch && c.lock == "redis" {
			c.kind = KindDiffers
		}
		if cell.Kind() != c.kind || !strings.HasPrefix(cell.Text(0), c.text) {
			t.Errorf("%s: %s %q, want %s %q", c.lock, cell.Kind(), cell.Text(0), c.kind, c.text)
		}
	}
	if got := m.Cell("redislock", sc.Name).Text(48); got != "finding: unsafe where the reference redis ended…" {
		t.Errorf("the terminal's cell %q", got)
	}

	// Without redis in the table, its run is asked for once and kept.
	order, refsAsked = nil, nil
	m = Plan([]string{"redislock"}, []*scenarios.Scenario{sc}, t.TempDir(), nil)
	m.Play(context.Background(), play, runner.Options{}, nil)
	if c := m.Cell("redislock", sc.Name); c.Kind() != KindFinding || !slices.Equal(refsAsked, []string{"redis"}) || m.Refs[RefKey("redis", "", sc.Name)] == nil {
		t.Errorf("redislock alone: %s %q, references asked %v, kept %v", c.Kind(), c.Text(0), refsAsked, m.Refs)
	}
}

// TestFixedCell: a cell played on servers that have its story's bug
// fixed says so, with the version that shows it; one that ended
// otherwise there is not as expected.
func TestFixedCell(t *testing.T) {
	fixed := &runner.Outcome{Expected: "safe", Check: checker.Result{Verdict: "safe"}, Fixed: "etcd 3.5", Versions: map[string]string{"etcd": "3.7.3"}}
	var c Cell
	c.record(fixed, nil, false)
	if c.Kind() != KindMatch || c.Text(0) != "safe, as expected: fixed in etcd 3.5+, as the run on 3.7.3 shows" {
		t.Errorf("fixed: %s %q", c.Kind(), c.Text(0))
	}
	fixed.Check.Verdict = "unsafe"
	c = Cell{}
	c.record(fixed, nil, false)
	if c.Kind() != KindDiffers || c.Text(0) != "unsafe, NOT safe" {
		t.Errorf("not fixed after all: %s %q", c.Kind(), c.Text(0))
	}
	// A lock played as the story's counterfactual, whose bug (the
	// counterfactual's fixed_in) these servers have fixed.
	fixed.Check.Verdict = "safe"
	c = Cell{AsCounterfactual: "with etcd's Lock service instead"}
	c.record(fixed, nil, false)
	if want := "safe, as the story's counterfactual expects: with etcd's Lock service instead; fixed in etcd 3.5+, as the run on 3.7.3 shows"; c.Kind() != KindMatch || c.Text(0) != want {
		t.Errorf("fixed counterfactual: %s %q, want %q", c.Kind(), c.Text(0), want)
	}
}

// TestCounterfactualLockCell: a lock a story adds a defence to, played on
// that story, is the story's counterfactual (zookeeper on
// zookeeper-lock-delay): judged by the counterfactual's expected verdict,
// not found worse than the story's lock by the defence the story is
// about; a lock the counterfactual does not name is judged as ever.
func TestCounterfactualLockCell(t *testing.T) {
	sc, err := scenarios.Find("zookeeper-lock-delay")
	if err != nil {
		t.Fatal(err)
	}
	m := Plan([]string{"zookeeper", "zookeeper-lock-delay"}, []*scenarios.Scenario{sc}, t.TempDir(), nil)
	c := m.Cell("zookeeper", sc.Name)
	if c.AsCounterfactual == "" || c.Ref != nil || !c.Played.IsCounterfactual || c.Expected != checker.Unsafe {
		t.Fatalf("zookeeper on zookeeper-lock-delay: as counterfactual %q, ref %v, expected %s", c.AsCounterfactual, c.Ref, c.Expected)
	}
	if own := m.Cell("zookeeper-lock-delay", sc.Name); own.AsCounterfactual != "" || own.Played.IsCounterfactual {
		t.Fatalf("the story's own lock plays the story: %+v", own)
	}
	m.Play(context.Background(), func(_ context.Context, sc *scenarios.Scenario, _ runner.Options) (*runner.Outcome, error) {
		v := checker.Safe
		if sc.IsCounterfactual {
			v = checker.Unsafe
		}
		return &runner.Outcome{Expected: sc.Expected, Check: checker.Result{Verdict: v}}, nil
	}, runner.Options{}, nil)
	if c.Kind() != KindMatch || !strings.HasPrefix(c.Text(0), "unsafe, as the story's counterfactual expects: without the lock-delay") {
		t.Errorf("zookeeper on zookeeper-lock-delay: %s %q", c.Kind(), c.Text(0))
	}
}

// TestPeerCell: a lock that stands in for no other (postgres-session),
// worse than the story's own lock, another reference (postgres-xact), is
// another design's verdict, not a finding; a stand-in (goose, like
// postgres-session) is judged against the lock it stands in for.
func TestPeerCell(t *testing.T) {
	sc, err := scenarios.Find("postgres-xact")
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]checker.Verdict{"postgres-xact": checker.Safe, "postgres-session": checker.Unsafe, "goose": checker.Unsafe}
	play := func(_ context.Context, played *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
		res := &runner.Outcome{Scenario: played, Dir: o.Out, Expected: played.Expected, Check: checker.Result{Verdict: verdicts[played.Lock]}}
		if o.Reference != nil {
			res.JudgeAgainst(&runner.Outcome{Scenario: o.Reference, Check: checker.Result{Verdict: verdicts[o.Reference.Lock]}})
		}
		return res, nil
	}
	m := Plan([]string{"postgres-session", "goose"}, []*scenarios.Scenario{sc}, t.TempDir(), nil)
	m.Play(context.Background(), play, runner.Options{}, nil)
	peer, standIn := m.Cell("postgres-session", sc.Name), m.Cell("goose", sc.Name)
	if !peer.Peer || peer.Kind() != KindPeer || !strings.HasPrefix(peer.Text(0), "unsafe where postgres-xact, the story's lock, ended safe: what its design adds, not a finding") || strings.Contains(peer.Text(0), "a finding about") {
		t.Errorf("postgres-session: peer %v, %s %q", peer.Peer, peer.Kind(), peer.Text(0))
	}
	if standIn.Peer || standIn.Ref == nil || standIn.Ref.Lock != "postgres-session" {
		t.Errorf("goose: peer %v, judged against %v; want postgres-session, the lock it stands in for", standIn.Peer, standIn.Ref)
	}
}

// TestWatchdogReference: a lock that renews its leases by itself
// (rueidislock) is judged against redis played with a token watchdog, one
// that does not (redislock) against redis as the story has it, and a
// story with a watchdog of its own keeps it; the two references are kept
// apart in Refs.
func TestWatchdogReference(t *testing.T) {
	var list []*scenarios.Scenario
	for _, name := range []string{"redis-ttl-expiry", "redis-naive-watchdog"} {
		sc, err := scenarios.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, sc)
	}
	m := Plan([]string{"rueidislock", "redislock"}, list, t.TempDir(), nil)
	for _, tc := range []struct{ lock, story, watchdog string }{
		{"rueidislock", "redis-ttl-expiry", "token"},
		{"redislock", "redis-ttl-expiry", ""},
		{"rueidislock", "redis-naive-watchdog", "pexpire"},
	} {
		c := m.Cell(tc.lock, tc.story)
		if c.NA != "" && tc.story == "redis-naive-watchdog" {
			continue // a plain PEXPIRE the lock cannot send
		}
		if c.Ref == nil || c.Ref.Lock != "redis" || c.Ref.Watchdog != tc.watchdog {
			t.Errorf("%s on %s: reference %+v, want redis with watchdog %q", tc.lock, tc.story, c.Ref, tc.watchdog)
		}
	}
	if RefKey("redis", "token", "s") == RefKey("redis", "", "s") {
		t.Error("a reference with a watchdog and one without share a key")
	}
}
