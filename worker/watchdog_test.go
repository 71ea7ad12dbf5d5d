package worker

import (
	"testing"

	"github.com/locksim/locksim/clients"
)

// TestPlainExpireSpec: a Redis lock's Spec says PlainExpire exactly when
// the lock it builds is a PlainExpirer, since scenarios.WithLock reads
// the one to decide whether the lock can tell a story whose watchdog
// needs the other. The locks are built on a closed port and never used
// (every Redis lock connects on first use).
func TestPlainExpireSpec(t *testing.T) {
	cfg := clients.Config{}
	cfg.AddServer(clients.RedisBackend, clients.Node{Name: "A", Addr: "127.0.0.1:1"})
	cfg.AddServer(clients.SentinelBackend, clients.Node{Name: "S1", Addr: "127.0.0.1:1"})
	for _, name := range clients.Names() {
		spec, err := clients.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			if spec.Backend != clients.RedisBackend && spec.Backend != clients.SentinelBackend {
				if spec.PlainExpire {
					t.Errorf("a %s lock says PlainExpire", spec.Backend)
				}
				return
			}
			l, err := spec.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, ok := l.(PlainExpirer); ok != spec.PlainExpire {
				t.Errorf("Spec.PlainExpire %v, but a PlainExpirer: %v", spec.PlainExpire, ok)
			}
		})
	}
}
