package hunt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// TestCandidatesAreStories: every candidate of a hunt, on each kind of
// lock and storage, is a story the catalogue's loader accepts, with a
// counterfactual; the same seed draws the same candidates, another seed
// others; the classic shapes come first.
func TestCandidatesAreStories(t *testing.T) {
	for _, c := range []struct{ lock, storage string }{
		{"redis", "plain"}, {"redlock", "plain"}, {"redlock", "fenced"}, {"postgres-session", "plain"}, {"etcd", "fenced"}, {"redis", "none"},
		{"postgres-session", "none"}, {"zookeeper", "none"}, {"redlock", "none"},
	} {
		sp, err := NewSpace(c.lock, c.storage, nil, 2*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.Kinds) == 0 {
			t.Fatalf("%s: no fault kind to search", c.lock)
		}
		for i := 0; i < 30; i++ {
			p := sp.Candidate(7, i)
			if !reflect.DeepEqual(p, sp.Candidate(7, i)) {
				t.Fatalf("%s candidate %d differs between two draws", c.lock, i)
			}
			s, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, nil)
			if err != nil {
				t.Fatalf("%s %s candidate %d (%s): %v", c.lock, c.storage, i, describePlan(p, sp.TTL), err)
			}
			if s.Scenario.Counterfactual == nil {
				t.Fatalf("%s candidate %d has no counterfactual", c.lock, i)
			}
			if _, err := s.Scenario.CounterfactualScenario(); err != nil {
				t.Fatalf("%s %s candidate %d (%s): its counterfactual: %v", c.lock, c.storage, i, describePlan(p, sp.TTL), err)
			}
			for _, f := range p.Faults {
				if f.Node != "" && int(f.Node[0]-'A') >= sp.Nodes {
					t.Fatalf("%s candidate %d strikes node %s of %d", c.lock, i, f.Node, sp.Nodes)
				}
			}
		}
		if reflect.DeepEqual(sp.Candidate(7, 40), sp.Candidate(8, 40)) && reflect.DeepEqual(sp.Candidate(7, 41), sp.Candidate(8, 41)) {
			t.Errorf("%s: seeds 7 and 8 draw the same swarm candidates", c.lock)
		}
	}
	sp, _ := NewSpace("redis", "plain", []string{"pause"}, time.Second, 0)
	if first := sp.Candidate(1, 0); len(first.Faults) != 1 || first.Faults[0].Kind != "pause" || first.Faults[0].Client != 1 || first.Faults[0].X <= 1 {
		t.Errorf("the first candidate is %+v, want the classic pause of the holder past the TTL", first)
	}
}

// TestNewSpaceRefuses: in the library's words (input names, not flags), a fault the lock's servers cannot take, an
// unknown fault and an unknown storage are refused in one line.
func TestNewSpaceRefuses(t *testing.T) {
	for _, c := range []struct {
		lock, storage string
		faults        []string
		want          string
	}{
		{"etcd", "fenced", []string{"clock-drift"}, "faults clock-drift: no clock fault reaches an etcd member"},
		{"redis", "plain", []string{"failover"}, ""},
		{"etcd", "plain", []string{"failover"}, "faults failover: it needs Redis nodes with replicas"},
		{"postgres-session", "plain", []string{"crash"}, "faults crash: it strikes a lock server and postgres-session's are not nodes of the story"},
		{"redis", "none", []string{"latency"}, ""}, // on the lock's links
		{"postgres-session", "plain", []string{"clock-drift"}, "faults clock-drift: it runs a lock server's clock"},
		{"redis", "plain", []string{"resume"}, `faults "resume": expected none or some of`},
		{"redis", "damp", nil, `storage "damp"`},
		{"nolock", "plain", nil, "nolock"},
		{"etcd", "fenced", nil, "ttl 300ms: etcd's leases last at least 2s"},
	} {
		ttl := 2 * time.Second
		if c.lock == "etcd" && c.faults == nil {
			ttl = 300 * time.Millisecond
		}
		_, err := NewSpace(c.lock, c.storage, c.faults, ttl, 0)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line with %q", c, err, c.want)
		}
	}
	sp, err := NewSpace("etcd", "fenced", nil, 2*time.Second, 0)
	if err != nil || strings.Contains(strings.Join(sp.Kinds, ","), "clock-drift") || !strings.Contains(strings.Join(sp.Kinds, ","), "crash") {
		t.Errorf("etcd's default kinds %v (%v): want a crash of a member and no node clock's drift", sp.Kinds, err)
	}
	for i := 0; i < 60; i++ { // a clock jump steps a client's clock, never a member's
		for _, f := range sp.Candidate(1, i).Faults {
			if f.Kind == "clock-jump" && f.Node != "" {
				t.Fatalf("etcd candidate %d jumps member %s's clock", i, f.Node)
			}
		}
	}
}

// oracle is a lock that breaks exactly when the holder is paused for at
// least 1.04 TTL once it holds the lock (after its grant, or after its
// read): a stand-in for the servers, to test the search and the
// shrinker, whose logic is the same whatever plays the stories.
func oracle(played *int) Player {
	return func(_ context.Context, s *Story) (Played, error) {
		*played++
		for _, f := range s.Plan.Faults {
			holds := f.At.Client == 1 && (f.At.Event == Granted || f.At.Event == Read)
			if f.Kind == "pause" && f.Client == 1 && f.X >= 1.04 && holds {
				return Played{Verdict: checker.Unsafe, Summary: "a lost update"}, nil
			}
		}
		return Played{Verdict: checker.Safe}, nil
	}
}

// TestShrinkToThreshold: from a plan of three clients and four faults
// of which one matters, the shrinker keeps that one, drops client 3 and
// the lease check, moves the pause to the earliest anchor where it still
// breaks the lock (client 1's grant, not the start nor its acquire),
// bisects its size to just above the threshold, proves the story
// 1-minimal and says where it turns.
func TestShrinkToThreshold(t *testing.T) {
	sp, err := NewSpace("redlock", "plain", nil, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	played := 0
	h := &hunter{o: Options{Space: sp, Play: oracle(&played), ShrinkRuns: 60, Say: t.Logf}, res: &Result{}}
	read1 := Anchor{Client: 1, Event: Read}
	start := Plan{Turns: []Turn{{0, 0.2}, {1.05, 0.2}, {1.3, 0.2}}, Options: LockOptions{CheckLease: true}, Faults: []Fault{
		{Kind: "clock-jump", Node: "B", X: 0.5, At: read1}, {Kind: "pause", Client: 1, X: 2.7, At: read1, After: 0.1},
		{Kind: "clock-drift", Node: "C", X: 2, At: Anchor{Event: Start}}, {Kind: "pause", Client: 3, X: 1, At: Anchor{Client: 3, Event: Asks}}}}
	final, err := h.shrink(context.Background(), start)
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Faults) != 1 || final.Faults[0].Kind != "pause" {
		t.Fatalf("shrunk to %+v, want the pause alone", final.Faults)
	}
	if a := final.Faults[0].At; a != (Anchor{Client: 1, Event: Granted}) || final.Faults[0].After != 0 {
		t.Errorf("the pause strikes %s (+%v TTL), want once client 1 is granted", a, final.Faults[0].After)
	}
	if len(final.Turns) != 2 || final.Options.CheckLease {
		t.Errorf("shrunk to %d clients, options %+v: want 2 and no lease check", len(final.Turns), final.Options)
	}
	if x := final.Faults[0].X; x < 1.04 || x > 1.15 {
		t.Errorf("pause shrunk to %.3f TTL, want just above the threshold 1.04", x)
	}
	if !h.res.OneMinimal || len(h.res.Thresholds) != 1 || !strings.Contains(h.res.Thresholds[0], "pause") {
		t.Errorf("one-minimal %v, thresholds %v", h.res.OneMinimal, h.res.Thresholds)
	}
	if h.res.ShrinkRuns == 0 || h.res.ShrinkRuns > 60 {
		t.Errorf("%d shrink runs, want 1 to 60", h.res.ShrinkRuns)
	}
	if _, err := sp.build(final, Meta{Name: "x"}, nil); err != nil {
		t.Errorf("the shrunk plan is no story: %v", err)
	}
}

// TestRunFindsAndSaysNothingWhenSafe: a hunt finds the breaking pause
// among its candidates and shrinks it; against a lock nothing breaks it
// plays its whole budget and finds nothing; an unknown run is never a
// finding.
func TestRunFindsAndSaysNothingWhenSafe(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	played := 0
	res, story, original, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: oracle(&played)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || story == nil || original == nil || res.Reproduced != 3 || res.Final == nil || len(res.Final.Faults) != 1 {
		t.Fatalf("found %v, story %v, reproduced %d of %d, final %+v", res.Found, story != nil, res.Reproduced, res.ReproducedOf, res.Final)
	}
	if res.Original.Faults[0].X == res.Final.Faults[0].X {
		t.Errorf("original %+v and final %+v: the shrink changed the original too", res.Original.Faults, res.Final.Faults)
	}
	if !strings.Contains(string(story.YAML), "cause: true") || !strings.Contains(string(story.YAML), "counterfactual:") {
		t.Errorf("found.yaml lacks its cause or counterfactual:\n%s", story.YAML)
	}
	never := func(context.Context, *Story) (Played, error) { return Played{Verdict: checker.Unknown}, nil }
	res, story, _, err = Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 12, Play: never})
	if err != nil || res.Found || story != nil || res.Candidates != 12 || res.Unknown != 12*runner.UnknownTries || res.StoryRuns != res.Unknown {
		t.Fatalf("all unknown: found %v, candidates %d, unknown %d of %d runs, err %v", res.Found, res.Candidates, res.Unknown, res.StoryRuns, err)
	}
	// A run the machine was too slow for is played again: the first try
	// of every story unknown, the hunt finds what it found above.
	tried := map[*Story]bool{}
	slowFirst := func(ctx context.Context, s *Story) (Played, error) {
		if !tried[s] {
			tried[s] = true
			return Played{Verdict: checker.Unknown}, nil
		}
		return oracle(&played)(ctx, s)
	}
	res, story, _, err = Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: slowFirst})
	if err != nil || !res.Found || story == nil || res.Reproduced != 3 || res.Unknown == 0 {
		t.Fatalf("first tries unknown: found %v, reproduced %d of %d, unknown %d, err %v", res.Found, res.Reproduced, res.ReproducedOf, res.Unknown, err)
	}
	res, _, _, _ = Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 12, Shard: 2, Of: 3, Play: never})
	if res.Candidates != 12 || res.Shard != "2/3" {
		t.Errorf("shard 2/3 played %d candidates", res.Candidates)
	}
}

// TestClaims: the k-th operation step of a client is its k-th
// invocation in the history; a granted acquire keeps its nodes, a write
// its value read, a refusal its reason.
func TestClaims(t *testing.T) {
	sp, _ := NewSpace("redlock", "plain", []string{"pause"}, time.Second, 0)
	p := Plan{Turns: two(0.2, 1.05), Faults: []Fault{{Kind: "pause", Client: 1, X: 1.5, At: Anchor{Client: 1, Event: Read}}}}
	s, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	ev := []history.Event{
		{Process: 1, Type: history.Invoke, Op: "acquire"}, {Process: 1, Type: history.Ok, Op: "acquire", Nodes: []string{"A", "B", "C"}},
		{Process: 1, Type: history.Invoke, Op: "write"},
		{Process: 0, Type: history.Fault, Op: "pause"},
		{Process: 2, Type: history.Invoke, Op: "acquire"}, {Process: 2, Type: history.Ok, Op: "acquire", Nodes: []string{"A", "B", "C", "D", "E"}},
		{Process: 2, Type: history.Invoke, Op: "write"}, {Process: 2, Type: history.Ok, Op: "write", Read: &zero},
		{Process: 2, Type: history.Invoke, Op: "release"}, {Process: 2, Type: history.Ok, Op: "release"},
		{Process: 1, Type: history.Ok, Op: "write", Read: &zero},
		{Process: 1, Type: history.Invoke, Op: "release"}, {Process: 1, Type: history.Fail, Op: "release", Reason: history.ReasonNotHeld},
	}
	cl := claims(s, ev, sp.Nodes)
	found, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, cl)
	if err != nil {
		t.Fatal(err)
	}
	text := string(found.YAML)
	for _, want := range []string{"granted_by:\n      - A\n      - B\n      - C", "reason: not-held", "read: 0", "Client 1 writes counter+1 from its read of 0: accepted."} {
		if !strings.Contains(text, want) {
			t.Errorf("found story lacks %q:\n%s", want, text)
		}
	}
}

// TestMerge: the shards of one hunt add up their runs, and the finding
// is the shard's with the fewest faults; shards of another hunt, or one
// twice, or a set with one missing, are refused; a partial merge, asked
// for, lists the shard it lacks.
func TestMerge(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	var shards []*Result
	for i := 1; i <= 3; i++ {
		played := 0
		res, _, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 6, Shard: i, Of: 3, Play: oracle(&played)})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, res)
	}
	names := []string{"hunt-1", "hunt-2", "hunt-3"}
	m, best, err := Merge(shards, names, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.MissingShards) != 0 {
		t.Errorf("every shard given, missing %v", m.MissingShards)
	}
	if m.Candidates != shards[0].Candidates+shards[1].Candidates+shards[2].Candidates || !m.Found || best < 0 || m.Final == nil {
		t.Fatalf("merged %+v from %d shards (best %d)", m, len(shards), best)
	}
	for i, s := range shards {
		if s.Found && len(s.Final.Faults) < len(m.Final.Faults) {
			t.Errorf("shard %d found %d fault(s), the merge keeps %d", i+1, len(s.Final.Faults), len(m.Final.Faults))
		}
	}
	other := *shards[1]
	other.Seed = 4
	if _, _, err := Merge([]*Result{shards[0], &other}, names, false); err == nil || !strings.Contains(err.Error(), "same hunt") {
		t.Errorf("another seed's shard merged: %v", err)
	}
	if _, _, err := Merge([]*Result{shards[0], shards[0]}, names, true); err == nil || !strings.Contains(err.Error(), "shard 1/3 again") {
		t.Errorf("a shard twice merged: %v", err)
	}
	two := []*Result{shards[0], shards[2]}
	if _, _, err := Merge(two, []string{"hunt-1", "hunt-3"}, false); err == nil || !strings.Contains(err.Error(), "shard 2/3 missing") {
		t.Errorf("shard 2 of 3 missing, merged: %v", err)
	}
	p, _, err := Merge(two, []string{"hunt-1", "hunt-3"}, true)
	if err != nil || !slices.Equal(p.MissingShards, []string{"2/3"}) || p.Candidates != shards[0].Candidates+shards[2].Candidates {
		t.Errorf("partial merge without shard 2: %+v, %v", p, err)
	}
}

// TestTimeline: a plan's steps come in the order its clients can take
// them: a fault at the start before anything; a holder paused once it
// has read does not hold up the next client's acquire (client 2 asks
// before client 1 is waited for), nor is its own acquire put off by it;
// a fault anchored to a client's asking makes its acquire async, the
// fault struck while it waits.
func TestTimeline(t *testing.T) {
	read1 := Anchor{Client: 1, Event: Read}
	p := Plan{Turns: two(0.2, 1.05), Faults: []Fault{
		{Kind: "latency", Client: 2, Links: []string{"A"}, X: 0.1, At: Anchor{Event: Start}},
		{Kind: "pause", Client: 1, X: 1.5, At: read1},
		{Kind: "pause", Client: 2, X: 0.1, At: Anchor{Client: 2, Event: Asks}}}}
	steps, err := timeline(p, true, time.Second, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, st := range steps {
		if st.Do != "sleep" {
			order = append(order, fmt.Sprintf("%s %d", st.Do, st.Client))
		}
	}
	want := "latency 2, acquire 1, write 1, pause 1, acquire 2, pause 2, wait 2, write 2, wait 2, release 2, wait 1, release 1, heal 0"
	if got := strings.Join(order, ", "); got != want {
		t.Errorf("steps:\n got %s\nwant %s", got, want)
	}
	if !steps[slices.IndexFunc(steps, func(s step) bool { return s.Do == "acquire" && s.Client == 2 })].Async {
		t.Error("client 2's acquire, struck while it waits, is not async")
	}
	if _, err := timeline(Plan{Turns: two(0.2, 1), Faults: []Fault{{Kind: "pause", Client: 3, X: 1, At: read1}}}, true, time.Second, time.Second); err == nil {
		t.Error("a fault on client 3 of a plan of 2 was laid out")
	}
}

// TestRing: the majorities ring gives each client a different majority
// of five nodes, each overlapping the next, and names the node clients 1
// and 2 share.
func TestRing(t *testing.T) {
	sp, err := NewSpace("redlock", "none", nil, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	ring, shared := sp.ring(3)
	var cut []string
	for _, f := range ring {
		cut = append(cut, fmt.Sprintf("%d:%s", f.Client, strings.Join(f.Links, "")))
	}
	if got := strings.Join(cut, " "); got != "1:DE 2:AB 3:CD" || shared != "C" {
		t.Errorf("ring cuts %s, shared %s; want 1:DE 2:AB 3:CD (majorities ABC, CDE, EAB), shared C", got, shared)
	}
	if r, _ := (Space{Nodes: 1}).ring(2); r != nil {
		t.Errorf("a ring on one node: %+v", r)
	}
}

// TestFallBackWhenTheShrunkStoryDoesNotReproduce: a lock that breaks on a
// pause just past the TTL while the hunt searches and shrinks, but only
// on a longer one when the found story is played (the bisected edge is
// not one the machine holds), ends with the plan before the bisection,
// reproduced, its thresholds dropped and no 1-minimality claimed.
func TestFallBackWhenTheShrunkStoryDoesNotReproduce(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause"}, time.Second, 0)
	edge := func(_ context.Context, s *Story) (Played, error) {
		for _, f := range s.Plan.Faults {
			min := 1.04
			if strings.HasSuffix(s.Scenario.Name, "-found") {
				min = 1.4
			}
			if f.Kind == "pause" && f.Client == 1 && f.X >= min {
				return Played{Verdict: checker.Unsafe, Summary: "a lost update"}, nil
			}
		}
		return Played{Verdict: checker.Safe}, nil
	}
	res, story, _, err := Run(context.Background(), Options{Space: sp, Seed: 1, Runs: 5, Play: edge})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || res.FellBack != "the shrunk plan before its sizes were bisected" || res.Reproduced != 3 || story == nil {
		t.Fatalf("found %v, fell back to %q, reproduced %d of %d", res.Found, res.FellBack, res.Reproduced, res.ReproducedOf)
	}
	if x := res.Final.Faults[0].X; x < 1.4 || res.Thresholds != nil || res.OneMinimal {
		t.Errorf("final pause %.2f TTL, thresholds %v, one-minimal %v", x, res.Thresholds, res.OneMinimal)
	}
}

// TestFallBackWhenTheShrunkStoryGoesAnotherWay: a shrunk story that is
// unsafe every time, but whose steps end one way in one run and another
// way in the next (client 2's acquire granted, then refused: a size on a
// timing edge), has claims no replay could hold: it is not counted as
// reproduced, and the hunt falls back to the plan before the bisection,
// whose runs all go one way. The story's claims are that way's.
func TestFallBackWhenTheShrunkStoryGoesAnotherWay(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause"}, time.Second, 0)
	found := 0
	edge := func(_ context.Context, s *Story) (Played, error) {
		for _, f := range s.Plan.Faults {
			if f.Kind != "pause" || f.Client != 1 || f.X < 1.04 {
				continue
			}
			refused := false // client 2's first acquire
			if strings.HasSuffix(s.Scenario.Name, "-found") {
				found++
				refused = f.X < 1.4 && found%2 == 0
			}
			return Played{Verdict: checker.Unsafe, Summary: "a lost update", Events: opsOf(s, refused)}, nil
		}
		return Played{Verdict: checker.Safe}, nil
	}
	res, story, _, err := Run(context.Background(), Options{Space: sp, Seed: 1, Runs: 5, Play: edge})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || res.FellBack != "the shrunk plan before its sizes were bisected" || res.Reproduced != 3 || res.OtherWay != 0 || story == nil {
		t.Fatalf("found %v, fell back to %q, %s", res.Found, res.FellBack, res.ReproducedLine())
	}
	if x := res.Final.Faults[0].X; x < 1.4 {
		t.Errorf("final pause %.2f TTL: the bisected edge kept", x)
	}
	if text := string(story.YAML); strings.Contains(text, "refused") || !strings.Contains(text, "expect: granted") {
		t.Errorf("the story's claims are not the way its runs went:\n%s", text)
	}
	if !strings.Contains(res.Counts(), "reproduced 3 of 3 in") {
		t.Errorf("counts: %s", res.Counts())
	}
	// A story on the edge alone, as reproduce sees it: its runs go
	// granted, refused, granted; the story is the way two went, and the
	// third is counted apart.
	h := &hunter{o: Options{Space: sp, Play: edge}, res: &Result{}}
	found = 0
	if _, err := h.reproduce(context.Background(), Plan{Turns: two(0.2, 1.05), Faults: []Fault{{Kind: "pause", Client: 1, X: 1.1, At: Anchor{Client: 1, Event: Granted}}}}); err != nil {
		t.Fatal(err)
	}
	if res := h.res; res.Reproduced != 2 || res.OtherWay != 1 || res.ReproducedLine() != "reproduced 2 of 3 as it tells (1 more unsafe by another path)" {
		t.Errorf("reproduce on the edge: %s", res.ReproducedLine())
	}
}

// opsOf is a history of story s in which every operation step is
// invoked and ends ok in its order, but client 2's first acquire, which
// is refused (held) when refused says so.
func opsOf(s *Story, refused bool) []history.Event {
	var ev []history.Event
	first := true
	for _, st := range s.steps {
		if st.Do != "acquire" && st.Do != "write" && st.Do != "release" {
			continue
		}
		done := history.Event{Process: st.Client, Type: history.Ok, Op: st.Do}
		if st.Client == 2 && st.Do == "acquire" && first {
			first = false
			if refused {
				done.Type, done.Reason = history.Fail, history.ReasonHeld
			}
		}
		ev = append(ev, history.Event{Process: st.Client, Type: history.Invoke, Op: st.Do}, done)
	}
	return ev
}

// TestWithProgramLeavesOutWhatItsHelloLacks: a client program without a
// watchdog, a lease check or a movable clock has none of them searched,
// each said in LeftOut; no candidate then steps a client's clock, and
// every candidate's story names the program and is one the program's
// hello covers.
func TestWithProgramLeavesOutWhatItsHelloLacks(t *testing.T) {
	sp, err := NewSpace("redis", "plain", nil, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	prog := scenarios.ClientProgram{Program: "p", Protocol: 2, Locks: []string{"redis"}, Ops: []string{"acquire", "release", "extend", "write"}, StorageModes: []string{"plain"}}
	sp, err = sp.WithProgram([]string{"p"}, prog, false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(sp.Options, "watchdog") || slices.Contains(sp.Options, "check_lease") || len(sp.LeftOut) != 3 {
		t.Fatalf("options %v, left out %q; want no watchdog, no check_lease, and three lines", sp.Options, sp.LeftOut)
	}
	for i := 0; i < 60; i++ {
		p := sp.Candidate(3, i)
		for _, f := range p.Faults {
			if strings.HasPrefix(f.Kind, "clock") && f.Node == "" {
				t.Fatalf("candidate %d moves client %d's clock: %+v", i, f.Client, f)
			}
		}
		s, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Scenario.ClientCmd, []string{"p"}) {
			t.Fatalf("candidate %d's story runs %v, want the program", i, s.Scenario.ClientCmd)
		}
		if err := s.Scenario.ClientProgramProblem(&prog); err != nil {
			t.Fatalf("candidate %d (%s): %v", i, describePlan(p, sp.TTL), err)
		}
	}
}

// TestBaselineOfTheSameName: a client program's lock may be hunted
// against locksim's own lock of the same name (node-redlock's redlock
// against redlock); the same lock twice is refused.
func TestBaselineOfTheSameName(t *testing.T) {
	sp, err := NewSpace("redlock", "plain", []string{"pause"}, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.WithBaseline("redlock"); err == nil || !strings.Contains(err.Error(), "the hunted lock itself") {
		t.Errorf("redlock against itself: %v, want refused", err)
	}
	prog := scenarios.ClientProgram{Program: "p", Protocol: 2, Locks: []string{"redlock"}, Ops: []string{"acquire", "release", "write"}, StorageModes: []string{"plain"}}
	if sp, err = sp.WithProgram([]string{"p"}, prog, true); err != nil {
		t.Fatal(err)
	}
	if sp, err = sp.WithBaseline("redlock"); err != nil || sp.Baseline != "redlock" {
		t.Errorf("a program's redlock against locksim's: %v (baseline %q)", err, sp.Baseline)
	}
}

// TestClaimsOfAnAsyncAcquire: a fault that strikes while an acquire
// waits makes the acquire async; its step says the client asks, and the
// wait says how the acquire ended, never that the client reads and works.
func TestClaimsOfAnAsyncAcquire(t *testing.T) {
	sp, _ := NewSpace("redlock", "plain", []string{"pause"}, time.Second, 0)
	p := Plan{Turns: two(0.2, 1.05), Faults: []Fault{{Kind: "pause", Client: 1, X: 1.5, At: Anchor{Client: 1, Event: Asks}, After: 0.03}}}
	s, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := []history.Event{
		{Process: 1, Type: history.Invoke, Op: "acquire"}, {Process: 1, Type: history.Ok, Op: "acquire", Nodes: []string{"A", "B", "C"}},
	}
	found, err := sp.build(p, Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, claims(s, ev, sp.Nodes))
	if err != nil {
		t.Fatal(err)
	}
	text := string(found.YAML)
	if !strings.Contains(text, "say: Client 1 asks for the lock.") || strings.Contains(text, "works for  before") {
		t.Errorf("the async acquire's narration:\n%s", text)
	}
}

// TestCountsAgree: hunt.json's counts of story runs, by phase, add up to
// the runs the player was asked for, in a hunt that finds, one that
// falls back, one that finds nothing, one with a baseline and a merge of
// shards; its names are the ones sim hunt prints; no number carries
// float noise (1.2, never 1.2000000000000002).
func TestCountsAgree(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	count := func(played *int, p Player) Player {
		return func(ctx context.Context, s *Story) (Played, error) { *played++; return p(ctx, s) }
	}
	var oracleRuns int
	edge := func(_ context.Context, s *Story) (Played, error) { // TestFallBack...'s
		for _, f := range s.Plan.Faults {
			min := 1.04
			if strings.HasSuffix(s.Scenario.Name, "-found") {
				min = 1.4
			}
			if f.Kind == "pause" && f.Client == 1 && f.X >= min {
				return Played{Verdict: checker.Unsafe, Summary: "a lost update", Reused: true}, nil
			}
		}
		return Played{Verdict: checker.Unknown}, nil
	}
	based, err := NewSpace("redlock", "plain", []string{"pause"}, time.Second, 0)
	if err == nil {
		based, err = based.WithBaseline("redlock-wallclock")
	}
	if err != nil {
		t.Fatal(err)
	}
	baselineRuns := 0
	baseline := func(ctx context.Context, s *Story) (Played, error) { // the baseline is safe
		if s.Scenario.Lock != "redlock" {
			baselineRuns++
			return Played{Verdict: checker.Safe}, nil
		}
		return oracle(&oracleRuns)(ctx, s)
	}
	for _, c := range []struct {
		name string
		sp   Space
		runs int
		play Player
	}{
		{"found", sp, 20, oracle(&oracleRuns)},
		{"fell back", sp, 5, edge},
		{"nothing", sp, 7, func(context.Context, *Story) (Played, error) { return Played{Verdict: checker.Safe}, nil }},
		{"baseline", based, 20, baseline},
	} {
		played := 0
		res, _, _, err := Run(context.Background(), Options{Space: c.sp, Seed: 3, Runs: c.runs, Play: count(&played, c.play)})
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, c.name, res, played)
		if c.name == "fell back" && (res.FellBack == "" || res.ReproductionRuns <= res.ReproducedOf) {
			t.Errorf("fell back: %q, %d reproduction runs for %d of the final story", res.FellBack, res.ReproductionRuns, res.ReproducedOf)
		}
		if c.name == "baseline" && (baselineRuns == 0 || !res.Found) {
			t.Errorf("baseline: found %v, %d runs of the baseline", res.Found, baselineRuns)
		}
	}
	var shards []*Result
	total := 0
	for i := 1; i <= 3; i++ {
		played := 0
		res, _, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 6, Shard: i, Of: 3, Play: count(&played, oracle(&oracleRuns))})
		if err != nil {
			t.Fatal(err)
		}
		shards, total = append(shards, res), total+played
	}
	m, _, err := Merge(shards, []string{"1", "2", "3"}, false)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, "merged", m, total)
}

// checkCounts holds a hunt.json to the runs played and to itself.
func checkCounts(t *testing.T, name string, res *Result, played int) {
	t.Helper()
	if res.StoryRuns != played || res.CandidateRuns+res.ShrinkRuns+res.ReproductionRuns != played {
		t.Errorf("%s: %d story runs = %d candidate + %d shrink + %d reproduction runs, the player played %d",
			name, res.StoryRuns, res.CandidateRuns, res.ShrinkRuns, res.ReproductionRuns, played)
	}
	if res.Unknown > res.StoryRuns || res.ServersReused > res.StoryRuns || res.ReproducedOf > res.ReproductionRuns ||
		res.Candidates > res.CandidateRuns || (res.Found != (res.ReproductionRuns > 0)) {
		t.Errorf("%s: counts that contradict each other: %+v", name, res)
	}
	b, _ := json.Marshal(res)
	var fields map[string]any
	json.Unmarshal(b, &fields)
	for _, k := range []string{"candidates", "candidate_runs", "shrink_runs", "reproduction_runs", "story_runs"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("%s: hunt.json has no %q: %s", name, k, b)
		}
	}
	if _, ok := fields["runs"]; ok {
		t.Errorf("%s: hunt.json's \"runs\" is back (candidates, or story runs?)", name)
	}
	if noise := regexp.MustCompile(`\d\.\d*(0000|9999)\d`).FindAll(b, -1); noise != nil {
		t.Errorf("%s: numbers with float noise in hunt.json: %s", name, noise)
	}
}

// TestRoundUp: two significant digits, rounded up, printed as written.
func TestRoundUp(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1.15, "1.2"}, {1.1000000000000001, "1.1"}, {1.1, "1.1"}, {0.494140625, "0.5"}, {0.9950001, "1"},
		{12.3, "13"}, {0.0271, "0.028"}, {1.0375, "1.1"}, {2.7, "2.7"},
	} {
		if got := strconv.FormatFloat(roundUp(c.x), 'f', -1, 64); got != c.want {
			t.Errorf("roundUp(%v) = %s, want %s", c.x, got, c.want)
		}
	}
}

// TestHarnessFailuresArePlayedAgain: a story run that ends in a harness
// failure is counted as one, never judged, and played again; the hunt
// goes on and finds what it would have found, its counts agreeing; three
// failures in a row stop it, with the last failure named.
func TestHarnessFailuresArePlayedAgain(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	oracleRuns, played := 0, 0
	flaky := func(ctx context.Context, s *Story) (Played, error) {
		played++
		if played%5 == 2 { // one run in five fails to start its clients, never twice in a row
			return Played{Verdict: checker.Unsafe}, &runner.HarnessError{Err: errors.New("client 1: node C: i/o timeout")}
		}
		return oracle(&oracleRuns)(ctx, s)
	}
	var said []string
	res, story, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: flaky,
		Say: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }})
	if err != nil || !res.Found || story == nil {
		t.Fatalf("a hunt with a harness failure in five runs: found %v, err %v", res != nil && res.Found, err)
	}
	if want := (played + 3) / 5; res.HarnessFailures != want {
		t.Errorf("%d harness failures counted, the player failed %d times", res.HarnessFailures, want)
	}
	checkCounts(t, "flaky", res, played)
	if !slices.ContainsFunc(said, func(l string) bool { return strings.Contains(l, "harness failure (not a verdict): client 1: node C") }) {
		t.Errorf("the hunt did not say it played a failed run again: %q", said)
	}
	played = 0
	broken := func(context.Context, *Story) (Played, error) {
		played++
		return Played{}, &runner.HarnessError{Err: errors.New("redis-server would not start")}
	}
	res, _, _, err = Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: broken})
	if err == nil || !strings.Contains(err.Error(), "3 harness failures in a row, the last: redis-server would not start") || played != 3 || res != nil {
		t.Errorf("a harness that never starts: %d runs, err %v", played, err)
	}
}

// TestHungCallIsAFinding: a lock whose release never returns once its
// holder is paused past 1.04 TTL (the harness's note of a hung call, the
// run hung) breaks the lock as an unsafe run does: the hunt finds it,
// shrinks it to that pause, and the found story expects hung. A leaked
// run (a lease left held) is no finding. The client
// killed for the hang cuts its release off: no claim says how it ended.
func TestHungCallIsAFinding(t *testing.T) {
	sp, _ := NewSpace("redis", "plain", []string{"pause", "clock-jump"}, time.Second, 0)
	for _, hang := range []bool{true, false} {
		played := 0
		breaks := oracle(&played)
		play := func(ctx context.Context, s *Story) (Played, error) {
			out, err := breaks(ctx, s)
			if out.Verdict != checker.Unsafe {
				return out, err
			}
			out = Played{Verdict: checker.Leaked, Summary: "leaked: lock L stayed held after client 1 released"}
			if hang {
				out.Verdict, out.Summary = checker.Hung, "hung: client 1's release never returned within 31s"
				out.Events = []history.Event{
					{Process: 1, Type: history.Invoke, Op: history.OpAcquire}, {Process: 1, Type: history.Ok, Op: history.OpAcquire},
					{Process: 1, Type: history.Invoke, Op: history.OpWrite}, {Process: 1, Type: history.Ok, Op: history.OpWrite, Read: history.Int64(0)},
					{Process: 1, Type: history.Invoke, Op: history.OpRelease},
					{Process: 1, Type: history.Note, Op: history.OpHung, Detail: "client 1's release never returned within 31s"},
					{Process: 1, Type: history.Ok, Op: history.OpCrash}}
			}
			return out, err
		}
		res, story, _, err := Run(context.Background(), Options{Space: sp, Seed: 3, Runs: 20, Play: play})
		if err != nil {
			t.Fatal(err)
		}
		if !hang {
			if res.Found {
				t.Errorf("a leak without a hung call was a finding")
			}
			continue
		}
		if !res.Found || story == nil || len(res.Final.Faults) != 1 || res.Final.Faults[0].Kind != "pause" {
			t.Fatalf("found %v, final %+v", res.Found, res.Final)
		}
		yaml := string(story.YAML)
		if !strings.Contains(yaml, "\nexpected: hung\n") {
			t.Errorf("found.yaml does not expect hung:\n%s", yaml)
		}
		if strings.Contains(yaml, "Client 1 releases the lock: ok") {
			t.Errorf("found.yaml claims the release that never returned ended ok:\n%s", yaml)
		}
	}
}

// TestOneDownFaultPerNode: a plan never takes one node down twice (a
// crash and a failover of A, say): the second would find no server to
// kill, and the hunt stopped on the harness failures (redislock's hunt in
// sim findings).
func TestOneDownFaultPerNode(t *testing.T) {
	sp, err := NewSpace("redis", "none", []string{"crash", "failover", "power-loss", "pause"}, 500*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	downed := 0 // plans with a down fault and another fault
	for i := range 2000 {
		p := sp.Candidate(1, i)
		down := map[string]string{}
		n := 0
		for _, f := range p.Faults {
			if d := downs(f); d != "" {
				n++
				if k, ok := down[d]; ok {
					t.Fatalf("candidate %d takes node %s down twice: %s and %s", i, f.Node, k, f.Kind)
				}
				down[d] = f.Kind
			}
		}
		if n >= 1 && len(p.Faults) >= 2 {
			downed++
		}
	}
	if downed == 0 {
		t.Fatal("no candidate drew a down fault beside another: the test checks nothing")
	}
}
