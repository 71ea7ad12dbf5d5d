package reports

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/cost"
)

// costResult is a run of two options, with marks at one of them.
func costResult() *cost.Result {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	return &cost.Result{
		Contenders: 4, Verdicts: cost.FromCatalogue,
		Floors: []cost.Floor{{Name: cost.FloorRedis, Latency: cost.Latency{P50: us(40), P99: us(90), Samples: 9}}},
		Rows: []cost.Row{
			{Option: cost.Option{Key: "redis", Lock: "redis"}, Floor: cost.FloorRedis, RatioP50: 2, RatioP99: 2,
				AcquireRelease: cost.Latency{P50: us(80), P99: us(180), Samples: 9}, OneLock: cost.Rate{PerSec: 5000, Granted: 9},
				Defences: map[string]cost.Latency{cost.DefenceNone: {P50: us(300), P99: us(700)}, cost.DefenceFenced: {P50: us(420), P99: us(900)}, cost.DefenceWatchdog: {P50: us(40), P99: us(90)}}},
			{Option: cost.Option{Key: "redlock/always", Lock: "redlock"}, Floor: cost.FloorRedis, RatioP50: 20, RatioP99: 30,
				AcquireRelease: cost.Latency{P50: us(800), P99: us(2500), Samples: 9}, OneLock: cost.Rate{PerSec: 600, Granted: 9},
				Defences: map[string]cost.Latency{cost.DefenceNone: {P50: us(1100), P99: us(3000)}}},
		},
		Marks: []cost.Mark{
			{Story: "a", Option: "redis", Defence: cost.DefenceNone, Fault: "pause", Verdict: "unsafe"},
			{Story: "b", Option: "redis", Defence: cost.DefenceFenced, Fault: "pause", Verdict: "safe"},
			{Story: "c", Option: "redis", Defence: cost.DefenceWatchdog, Fault: cost.FaultNone, Verdict: "safe"},
			{Story: "d", Option: "redlock/always", Defence: cost.DefenceNone, Fault: "crash", Verdict: "safe"},
			{Story: "e", Option: "redlock/always", Defence: cost.DefenceNone, Fault: "crash", Verdict: "unsafe"},
			// Not measured here: drawn nowhere.
			{Story: "f", Option: "etcd", Defence: cost.DefenceNone, Fault: "partition", Verdict: "unsafe"},
		},
	}
}

func TestCostPNG(t *testing.T) {
	for _, x := range []CostX{CostP99, CostRate} {
		b, err := CostPNG(costResult(), x)
		if err != nil {
			t.Fatalf("%s: %v", x, err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: not a PNG: %v", x, err)
		}
	}
	// Nothing marked: still a chart, which says so.
	r := costResult()
	r.Marks = nil
	if _, err := CostPNG(r, CostP99); err != nil {
		t.Fatal(err)
	}
}

// TestCostOptionsNumbersEveryMeasuredOption: the chart numbers every
// option measured, marked or not (postgres-session/pgbouncer, which no
// story plays, once had no number), from the cheapest, and leaves out a
// row that was not measured.
func TestCostOptionsNumbersEveryMeasuredOption(t *testing.T) {
	r := costResult()
	r.Rows = append(r.Rows,
		cost.Row{Option: cost.Option{Key: "unmarked", Lock: "redis"}, OneLock: cost.Rate{PerSec: 9000, Granted: 9},
			Defences: map[string]cost.Latency{cost.DefenceNone: {P50: time.Millisecond / 10, P99: time.Millisecond / 5}}},
		cost.Row{Option: cost.Option{Key: "failed", Lock: "redis"}, Err: "starting its servers: no"})
	for x, want := range map[CostX]string{CostP99: "unmarked,redis,redlock/always", CostRate: "redlock/always,redis,unmarked"} {
		if got := strings.Join(costOptions(r, x), ","); got != want {
			t.Errorf("%s: options numbered %s, want %s", x, got, want)
		}
	}
}

func TestCostTable(t *testing.T) {
	var b bytes.Buffer
	CostTable(&b, costResult())
	for _, want := range []string{"redis PING 40 / 90", "redis  ", "80 / 180", "+120", "redlock/always"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
