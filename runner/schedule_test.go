package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
)

func gen(fault string, faults int) scenarios.Generator {
	size := map[string]float64{"pause": float64(250 * time.Millisecond), "clock-jump": float64(time.Second),
		"latency": float64(80 * time.Millisecond), "clock-drift": 1.5}[fault]
	g := scenarios.Generator{Fault: fault, Faults: faults, Size: size}
	g.Duration.Duration = 300 * time.Millisecond
	return g
}

// TestScheduleSameSeedSameSchedule: the schedule is a function of the seed
// alone; another seed gives another schedule; faults stay in the first
// third of the trial, in order, on clients and nodes that exist.
func TestScheduleSameSeedSameSchedule(t *testing.T) {
	for _, tc := range []struct {
		fault           string
		faults, clients int
		nodes           int
	}{
		{"pause", 1, 4, 1}, {"pause", 5, 4, 1}, {"clock-jump", 3, 2, 5}, {"latency", 2, 3, 0}, {"clock-drift", 1, 2, 5},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			g := gen(tc.fault, tc.faults)
			a := Schedule(g, tc.clients, tc.nodes, TrialSeed(42, 3, 7))
			b := Schedule(g, tc.clients, tc.nodes, TrialSeed(42, 3, 7))
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
			}
			if len(a) != tc.faults {
				t.Fatalf("%d faults planned, want %d", len(a), tc.faults)
			}
			differs := false
			for trial := 0; trial < 20; trial++ {
				if !reflect.DeepEqual(a, Schedule(g, tc.clients, tc.nodes, TrialSeed(42, 3, 100+trial))) {
					differs = true
				}
			}
			if !differs {
				t.Errorf("20 other seeds all gave the same schedule %v", a)
			}
			for i, p := range a {
				if p.At < 0 || p.At > g.Duration.Duration/3 || (i > 0 && p.At < a[i-1].At) {
					t.Errorf("fault %d at %v: want in order within the first third of %v", i, p.At, g.Duration)
				}
				if p.Client < 1 || p.Client > tc.clients {
					t.Errorf("fault %d on client %d of %d", i, p.Client, tc.clients)
				}
				if p.Node != "" && (p.Node[0] < 'A' || int(p.Node[0]-'A') >= tc.nodes) {
					t.Errorf("fault %d on node %s of %d", i, p.Node, tc.nodes)
				}
			}
		})
	}
}

func TestTrialSeedsDiffer(t *testing.T) {
	seen := map[uint64]bool{}
	for p := 0; p < 10; p++ {
		for tr := 0; tr < 30; tr++ {
			s := TrialSeed(1, p, tr)
			if seen[s] {
				t.Fatalf("point %d trial %d: seed %d repeats", p, tr, s)
			}
			seen[s] = true
		}
	}
	if TrialSeed(1, 0, 0) == TrialSeed(2, 0, 0) {
		t.Fatal("the run's seed does not change the trial seed")
	}
}

func TestScheduleNone(t *testing.T) {
	if p := Schedule(gen("none", 0), 4, 1, 1); p != nil {
		t.Fatalf("fault none planned %v", p)
	}
	if p := Schedule(gen("clock-jump", 1), 4, 0, 1); p != nil {
		t.Fatalf("a clock jump with no Redis node planned %v", p)
	}
}

// TestLoopsOutlastALateFault: the clients loop long enough for a fault
// aimed at a critical section to strike as late as armWait after its
// time, run its course and settle; a fault on a node strikes at once and
// needs no such wait.
func TestLoopsOutlastALateFault(t *testing.T) {
	g := scenarios.Generator{Fault: "pause"}
	g.Duration.Duration = 60 * time.Millisecond
	plan := []Planned{{Fault: "pause", At: 10 * time.Millisecond, Size: 150 * time.Millisecond}}
	if got, want := loopDuration(g, plan, settle), 10*time.Millisecond+armWait(g)+150*time.Millisecond+settle; got != want {
		t.Errorf("pause: loops last %v, want %v (its time, armWait, the pause, settle)", got, want)
	}
	g.Fault = "clock-jump"
	if got, want := loopDuration(g, []Planned{{Fault: "clock-jump", Size: time.Second}}, settle), 60*time.Millisecond; got < want || got >= want+armWait(g) {
		t.Errorf("clock jump: loops last %v, want no armWait in it", got)
	}
}
