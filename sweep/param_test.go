package sweep

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
)

func TestParseParam(t *testing.T) {
	for _, tc := range []struct {
		in       string
		key      string
		from, to Value
	}{
		{"pause=0.2ttl..3ttl", "pause", Value{0.2, true}, Value{3, true}},
		{"jump=100ms..2s", "jump", Value{float64(100 * time.Millisecond), false}, Value{float64(2 * time.Second), false}},
		{"drift=1..3", "drift", Value{1, false}, Value{3, false}},
		{"ttl=50ms..1s", "ttl", Value{float64(50 * time.Millisecond), false}, Value{float64(time.Second), false}},
		{"work=0..0.5ttl", "work", Value{0, false}, Value{0.5, true}},
		// A fault's size alone: the range its kind declares.
		{"pause", "pause", Value{0.2, true}, Value{3, true}},
		{"drift", "drift", Value{1, false}, Value{3, false}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if tc.key == "work" {
				if _, err := ParseParam(tc.in); err == nil {
					t.Fatal("mixed units accepted")
				}
				return
			}
			p, err := ParseParam(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.Key != tc.key || p.From != tc.from || p.To != tc.to {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

func TestParseParamErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ttl", "expected KEY=FROM..TO"},
		{"speed=1..2", `unknown key "speed"`},
		{"pause=1s", "expected a range FROM..TO"},
		{"pause=2s..1s", "FROM is above TO"},
		{"pause=abc..1s", `expected a duration like 200ms or 2s, or a multiple of the TTL like 0.5ttl, got "abc"`},
		{"pause=-1s..1s", "expected a duration"},
		{"ttl=0.5ttl..2ttl", "cannot be relative to itself"},
		{"drift=0..2", "expected a rate above 0"},
		{"pause=xttl..2ttl", "expected a multiple of the TTL"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseParam(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

func TestPoints(t *testing.T) {
	p, _ := ParseParam("pause=0.2ttl..3ttl")
	pts := p.Points(8)
	if len(pts) != 8 || pts[0].X != 0.2 || math.Abs(pts[7].X-3) > 1e-9 || !pts[3].RelTTL {
		t.Fatalf("points %v", pts)
	}
	if d := pts[7].Duration(100 * time.Millisecond); d != 300*time.Millisecond {
		t.Fatalf("3ttl of 100ms = %v", d)
	}
	if one := p.Points(1); len(one) != 1 || one[0].X != 0.2 {
		t.Fatalf("one point: %v", one)
	}
}

// TestWilson checks the interval against published values (Newcombe 1998,
// table I, and the usual 95% figures) within 0.001.
func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n    int
		low, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{0, 30, 0, 0.1135},
		{30, 30, 0.8865, 1},
	} {
		lo, hi := Wilson(tc.k, tc.n)
		if math.Abs(lo-tc.low) > 0.001 || math.Abs(hi-tc.hi) > 0.001 {
			t.Errorf("Wilson(%d, %d) = %.4f..%.4f, want %.4f..%.4f", tc.k, tc.n, lo, hi, tc.low, tc.hi)
		}
	}
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no trials: %v..%v, want 0..1", lo, hi)
	}
}

// TestSweepRefusesAnotherFaultsSize: a sweep of the size of a fault the
// generator does not draw is refused before any server starts.
func TestSweepRefusesAnotherFaultsSize(t *testing.T) {
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseParam("jump=100ms..1s")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{Param: &p})
	want := "param jump: jump sizes the clock-jump fault, and gen-pause draws pause (its fault's size is pause)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if err := checkKey(sc, "pause"); err != nil {
		t.Fatalf("its own size refused: %v", err)
	}
	if err := checkKey(sc, "ttl"); err != nil {
		t.Fatalf("the TTL refused: %v", err)
	}
}

// TestSweepRefusesATTLTheLockCannotGrant: etcd's leases last whole
// seconds, so a sweep at a 50ms TTL would plot pauses against a lease 20
// times longer; it is refused before any server starts.
func TestSweepRefusesATTLTheLockCannotGrant(t *testing.T) {
	sc, err := scenarios.Find("gen-pause")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{Locks: []string{"etcd"}, TTL: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locks etcd: its leases last at least 2s") || strings.Contains(err.Error(), "--") {
		t.Fatalf("got %v", err)
	}
}
