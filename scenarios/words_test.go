package scenarios

import (
	"slices"
	"testing"
)

// TestClosest: only the nearest names, and only a plausible typo.
func TestClosest(t *testing.T) {
	flags := []string{"out", "all", "expect", "lock", "seed", "trials", "duration", "clients", "counterfactual", "repeat", "json", "quiet"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"ttl", nil},                   // two edits from all: no typo of it
		{"colour", nil},                // nothing near
		{"trails", []string{"trials"}}, // two edits in a long name
		{"sed", []string{"seed"}},
		{"jsn", []string{"json"}},
		{"counterfatcual", []string{"counterfactual"}},
		{"coun", []string{"counterfactual"}}, // a unique prefix
		{"c", nil},                           // the prefix of several
		{"o", []string{"out"}},
		{"lck", []string{"lock"}},
	} {
		if got := Closest(c.name, flags); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	// A tie gives all of the closest.
	if got := Closest("seet", []string{"seed", "seek", "state"}); !slices.Equal(got, []string{"seed", "seek"}) {
		t.Errorf("a tie: %q", got)
	}
}

// TestIndefinite: an etcd lock, a redis lock.
func TestIndefinite(t *testing.T) {
	for word, want := range map[string]string{"etcd": "an etcd", "redis": "a redis", "postgres": "a postgres", "zookeeper": "a zookeeper", "ExpireAt": "an ExpireAt"} {
		if got := Indefinite(word); got != want {
			t.Errorf("Indefinite(%q) = %q, want %q", word, got, want)
		}
	}
}
