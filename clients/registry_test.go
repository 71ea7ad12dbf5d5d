package clients

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// A Config's servers are one JSON field per backend, ahead of its other
// fields, as worker protocol v1 has them; and they read back.
func TestConfigJSON(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Servers: map[Backend][]Node{RedisBackend: {{Name: "A", Addr: "127.0.0.1:1"}, {Name: "B", Addr: "127.0.0.1:2"}}}, NodeTimeout: 200 * time.Millisecond, ClientID: 1},
			`{"redis":[{"name":"A","addr":"127.0.0.1:1"},{"name":"B","addr":"127.0.0.1:2"}],"node_timeout":200000000,"client_id":1}`},
		{Config{Servers: map[Backend][]Node{EtcdBackend: {{Name: "A", Addr: "127.0.0.1:1"}}}, Postgres: "postgres://x", ClientID: 2},
			`{"etcd":[{"name":"A","addr":"127.0.0.1:1"}],"postgres":"postgres://x","client_id":2}`},
		{Config{Postgres: "postgres://x"}, `{"postgres":"postgres://x"}`},
		{Config{Servers: map[Backend][]Node{"zookeeper": {{Name: "A", Addr: "h:1"}}}}, `{"zookeeper":[{"name":"A","addr":"h:1"}]}`},
		{Config{Servers: map[Backend][]Node{RedisBackend: nil}}, `{}`},
	} {
		b, err := json.Marshal(tc.cfg)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tc.want)
			continue
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		for k, v := range tc.cfg.Servers {
			if len(v) == 0 {
				delete(tc.cfg.Servers, k)
			}
		}
		if len(tc.cfg.Servers) == 0 {
			tc.cfg.Servers = nil
		}
		if !reflect.DeepEqual(back, tc.cfg) {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", b, back, tc.cfg)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"redis":"A"}`), &c); err == nil {
		t.Errorf("a backend's servers that are not a list: no error")
	}
}

// TestEveryMutantNamesItsReference: a mutant names the lock it breaks
// (MutantOf), a registered lock of the same servers that is no mutant:
// a story of the mutant is judged against it (scenarios.ReferenceLock).
func TestEveryMutantNamesItsReference(t *testing.T) {
	for _, name := range Names() {
		s, _ := Lookup(name)
		if s.Mutant == "" {
			if s.MutantOf != "" {
				t.Errorf("%s: MutantOf %q, but it is no mutant", name, s.MutantOf)
			}
			continue
		}
		ref, err := Lookup(s.MutantOf)
		switch {
		case err != nil:
			t.Errorf("%s: MutantOf %q: %v", name, s.MutantOf, err)
		case ref.Mutant != "" || ref.Backend != s.Backend:
			t.Errorf("%s: MutantOf %s, a %s lock (mutant %q); want a lock of %s that is no mutant", name, ref.Name, ref.Backend, ref.Mutant, s.Backend)
		}
	}
}

// TestRegisteredIsLookupForAKnownName: Registered gives a registered
// lock's spec, as Lookup does, and panics on a name nothing registered
// (a caller that skipped its Lookup).
func TestRegisteredIsLookupForAKnownName(t *testing.T) {
	for _, n := range Names() {
		want, err := Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := Registered(n); got.Name != want.Name || got.Backend != want.Backend {
			t.Errorf("Registered(%q) = %s on %s, Lookup: %s on %s", n, got.Name, got.Backend, want.Name, want.Backend)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Registered of an unknown lock did not panic")
		}
	}()
	Registered("no-such-lock")
}
