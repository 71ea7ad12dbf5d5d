package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// op is one operation's invocation and completion, at ms on the record.
func op(seq *int, client int, name string, from, to int, typ history.Type) []history.Event {
	*seq += 2
	return []history.Event{
		{Seq: int64(*seq - 1), Process: client, Op: name, Type: history.Invoke, Time: int64(from) * 1e6},
		{Seq: int64(*seq), Process: client, Op: name, Type: typ, Time: int64(to) * 1e6},
	}
}

// TestMissedOverlap: postgres-session's counterfactual tells client 2 to
// try the lock and write while client 1 works for 500ms. Played on time
// the window holds; with client 2's try-lock answered after 900ms (as
// beside two busy loops), client 2's write begins after client 1's has
// ended, the race never runs, and the run says so. A killed client's
// window times nothing. A try-lock held up by the lock and answered with
// an error after 5s (tooz's through pgbouncer's transaction pool: the
// pool's one connection is client 1's) times what follows by the lock:
// no miss; answered granted after 5s, the miss stays.
func TestMissedOverlap(t *testing.T) {
	sc := counterfactual(t, "postgres-session")
	play := func(tryLock int, kill bool, answer ...history.Type) string {
		var o overlaps
		var events []history.Event
		seq := 0
		steps := sc.Steps
		for i, st := range steps {
			now := int64(i) * 1e6 // each step sent 1ms after the last
			if kill && st.Do == "wait" {
				st = scenarios.Step{Do: "kill", Client: st.Client}
			}
			o.sending(i, st, now, 100*time.Millisecond)
		}
		events = append(events, op(&seq, 1, "acquire", 0, 1, history.Ok)...)
		events = append(events, op(&seq, 1, "write", 1, 510, history.Ok)...)
		answered := history.Ok
		if len(answer) > 0 {
			answered = answer[0]
		}
		events = append(events, op(&seq, 2, "acquire", 2, tryLock, answered)...)
		events = append(events, op(&seq, 2, "write", tryLock, tryLock+5, history.Ok)...)
		return o.missed(sc, events)
	}
	if m := play(5000, false, history.Info); m != "" {
		t.Errorf("try-lock held up, then no answer: missed %q", m)
	}
	if m := play(5000, false, history.Fail); m != "" {
		t.Errorf("try-lock held up, then refused: missed %q", m)
	}
	if m := play(5000, false); !strings.Contains(m, "began at t=5.000s") {
		t.Errorf("try-lock granted after 5s: missed %q", m)
	}
	if m := play(5, false); m != "" {
		t.Errorf("on time: missed %q", m)
	}
	m := play(900, false)
	if want := "step 4 (client 2's write) was told to happen during step 2 (client 1's write), but began at t=0.900s, after that ended at t=0.510s"; m != want {
		t.Errorf("slow try-lock: missed %q, want %q", m, want)
	}
	if m := play(900, true); m != "" {
		t.Errorf("client 1 killed: missed %q", m)
	}

	// Judged: the claimless counterfactual loses its verdict; the story
	// with claims keeps its own, since its claims show what happened.
	res, voided := Judge(checker.Result{Verdict: checker.Safe}, sc, nil, &history.Machine{Missed: m}, nil)
	if !voided || res.Verdict != checker.Unknown || !strings.Contains(res.Summary, "its race did not run as timed: "+m) {
		t.Errorf("counterfactual with a missed overlap: %s (voided %v) %q", res.Verdict, voided, res.Summary)
	}
	story, err := scenarios.Find("postgres-session")
	if err != nil {
		t.Fatal(err)
	}
	if res, voided := Judge(checker.Result{Verdict: checker.Safe}, story, nil, &history.Machine{Missed: m}, nil); voided || res.Verdict != checker.Safe {
		t.Errorf("story with claims and a missed overlap: %s %q", res.Verdict, res.Summary)
	}
	if res, voided := Judge(checker.Result{Verdict: checker.Unsafe}, sc, nil, &history.Machine{}, nil); voided || res.Verdict != checker.Unsafe {
		t.Errorf("counterfactual on time: %s %q", res.Verdict, res.Summary)
	}
}

// TestOverlapTimedByAFault: etcd-pause's client 2 acquires while client 1's
// 200ms write is held up by a pause, 3.55s of sleeps later. Its
// counterfactual takes the pause away, so the write ends first, as it
// must: that window was the pause's, not the work's, and times nothing.
func TestOverlapTimedByAFault(t *testing.T) {
	sc := counterfactual(t, "etcd-pause")
	o := sent(sc)
	seq := 0
	var events []history.Event
	events = append(events, op(&seq, 1, "acquire", 0, 1, history.Ok)...)
	events = append(events, op(&seq, 1, "write", 1, 210, history.Ok)...)
	events = append(events, op(&seq, 2, "acquire", 3600, 3605, history.Ok)...)
	events = append(events, op(&seq, 2, "write", 3605, 3610, history.Ok)...)
	if m := o.missed(sc, events); m != "" {
		t.Errorf("missed %q", m)
	}
}

// TestOverlapOfARefusedWrite: a write refused at once (its lock lost
// already) never works its 500ms: the steps after it beginning later is
// the lock's doing, not the machine's, and times nothing.
func TestOverlapOfARefusedWrite(t *testing.T) {
	sc := counterfactual(t, "postgres-session")
	o := sent(sc)
	seq := 0
	var events []history.Event
	events = append(events, op(&seq, 1, "acquire", 0, 1, history.Ok)...)
	events = append(events, op(&seq, 1, "write", 1, 3, history.Fail)...)
	events = append(events, op(&seq, 2, "acquire", 2, 900, history.Ok)...)
	events = append(events, op(&seq, 2, "write", 900, 905, history.Ok)...)
	if m := o.missed(sc, events); m != "" {
		t.Errorf("missed %q", m)
	}
	events[3].Type, events[3].Time = history.Ok, 510*1e6 // worked its 500ms
	if m := o.missed(sc, events); m == "" {
		t.Errorf("a write that worked its 500ms: no miss")
	}
}

// TestOverlapAfterAnUntimedStep: redlock-delay-during-acquire waits for
// client 1's acquire, which a latency holds up for seconds, while client
// 2's 1.5s write works; client 1's write after that wait is timed by the
// latency, not by the script, and times nothing.
func TestOverlapAfterAnUntimedStep(t *testing.T) {
	sc, err := scenarios.Find("redlock-delay-during-acquire")
	if err != nil {
		t.Fatal(err)
	}
	o := sent(sc)
	seq := 0
	var events []history.Event
	events = append(events, op(&seq, 1, "acquire", 1, 4900, history.Fail)...)
	events = append(events, op(&seq, 2, "acquire", 1110, 1120, history.Ok)...)
	events = append(events, op(&seq, 2, "write", 1120, 3030, history.Ok)...)
	events = append(events, op(&seq, 1, "write", 4928, 4930, history.Fail)...)
	if m := o.missed(sc, events); m != "" {
		t.Errorf("missed %q", m)
	}
}

// TestOverlapOfAPausedWrite: fenced-pause pauses client 1 for 2s in its
// 200ms write, and client 2 acquires and writes 1.35s in, while it
// sleeps. Beside two busy loops, client 2's acquire was answered only
// after client 1 had woken and written: client 2's write began after
// client 1's ended, and the counterfactual (plain storage) had no lost
// update to show. The pause is part of the window.
func TestOverlapOfAPausedWrite(t *testing.T) {
	sc := counterfactual(t, "fenced-pause")
	play := func(acquired int) string {
		o := sent(sc)
		seq := 0
		var events []history.Event
		events = append(events, op(&seq, 1, "acquire", 0, 1, history.Ok)...)
		events = append(events, op(&seq, 1, "write", 1, 2210, history.Ok)...)
		events = append(events, op(&seq, 2, "acquire", 1360, acquired, history.Ok)...)
		events = append(events, op(&seq, 2, "write", acquired, acquired+5, history.Ok)...)
		return o.missed(sc, events)
	}
	if m := play(1370); m != "" {
		t.Errorf("on time: missed %q", m)
	}
	if m := play(2300); !strings.Contains(m, "client 2's write) was told to happen during step 2 (client 1's write), but began at t=2.300s") {
		t.Errorf("a slow acquire: missed %q", m)
	}
}

// counterfactual is the counterfactual of the catalogue's story name.
func counterfactual(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	story, err := scenarios.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := story.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// sent is the windows of sc with every step sent, a millisecond apart.
func sent(sc *scenarios.Scenario) *overlaps {
	var o overlaps
	for i, st := range sc.Steps {
		o.sending(i, st, int64(i)*1e6, 100*time.Millisecond)
	}
	return &o
}
