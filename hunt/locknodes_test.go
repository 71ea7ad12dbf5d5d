package hunt

import (
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sweep"
)

// TestEveryLockRunsOnTheSameServers: every registered lock, resolved as a
// sweep variant (sim sweep --locks), as --lock on a story of its servers
// (sim run --lock, sim matrix) and as a hunt candidate (sim hunt), runs
// on the same servers: a sweep once charted single-node redsync under
// the name redsync. The quorum locks' five nodes are pinned, so a
// resolver that drifts to one node fails here.
func TestEveryLockRunsOnTheSameServers(t *testing.T) {
	gen, err := scenarios.Find("gen-pause") // one Redis node, lock redis
	if err != nil {
		t.Fatal(err)
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	quorum := map[string]bool{"redlock": true, "redsync": true, "redlock-wallclock": true, "redlock-no-validity": true}
	for _, name := range clients.Names() {
		t.Run(name, func(t *testing.T) {
			spec, _ := clients.Lookup(name)
			want := scenarios.LockNodes(nil, spec)
			if quorum[name] && want != 5 {
				t.Errorf("a quorum lock on %d nodes, want 5", want)
			}

			v, err := sweep.Variant(gen, name)
			if err != nil {
				t.Fatal(err)
			}
			if v.Nodes != want {
				t.Errorf("as a sweep variant of %s: %d node(s), want %d", gen.Name, v.Nodes, want)
			}

			// --lock on the smallest story of the lock's servers with no
			// fence of its own (whose nodes would be the fence's).
			played := false
			for _, sc := range all {
				own, err := clients.Lookup(sc.Lock)
				if err != nil || own.Backend != spec.Backend || sc.Fence != "" || sc.Nodes > 1 || sc.Generator != nil {
					continue
				}
				wl, err := scenarios.WithLock(sc, name)
				if err != nil {
					continue // a story that names a node the lock lacks
				}
				played = true
				if wl.Scenario.Nodes != want {
					t.Errorf("as --lock on %s: %d node(s), want %d", sc.Name, wl.Scenario.Nodes, want)
				}
				break
			}
			if !played {
				t.Errorf("no story of %s's servers takes --lock %s", spec.Backend, name)
			}

			sp, err := NewSpace(name, "none", nil, max(2*time.Second, spec.MinTTL), 0)
			if err != nil {
				t.Fatalf("sim hunt refuses it: %v", err)
			}
			s, err := sp.build(sp.Candidate(1, 0), Meta{Name: "x", Title: "x", Source: "x", Explain: "x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Nodes != want || s.Scenario.Nodes != want {
				t.Errorf("as a hunt candidate: the space has %d node(s), its story %d; want %d", sp.Nodes, s.Scenario.Nodes, want)
			}
		})
	}
}
