package hunt

import (
	"slices"
	"strings"
	"testing"
)

// TestRealisticSpace: --realistic leaves the clock-drift out of a hunt
// and says why, and leaves every other kind in.
func TestRealisticSpace(t *testing.T) {
	sp, err := NewSpace("redis", "plain", nil, DefaultTTL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sp.Kinds, "clock-drift") {
		t.Fatalf("the default space has no clock-drift to leave out: %v", sp.Kinds)
	}
	r := sp.Realistic()
	if slices.Contains(r.Kinds, "clock-drift") || len(r.Kinds) != len(sp.Kinds)-1 {
		t.Errorf("realistic kinds %v, from %v", r.Kinds, sp.Kinds)
	}
	if len(r.Unrealistic) != 1 || !strings.Contains(r.Unrealistic[0], "500 ppm") {
		t.Errorf("what it says it left out: %q", r.Unrealistic)
	}
}
