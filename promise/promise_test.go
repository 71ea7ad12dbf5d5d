package promise

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, n := range Names() {
		if p, err := Parse(n); err != nil || string(p) != n {
			t.Errorf("Parse(%q) = %q, %v", n, p, err)
		}
		if Property(n).Says() == n {
			t.Errorf("%s has no words of its own", n)
		}
	}
	if _, err := Parse("fencing"); err == nil || !strings.Contains(err.Error(), "fencing-token") {
		t.Errorf("Parse(fencing) = %v, want an error naming the set", err)
	}
}

func TestCheckAndOf(t *testing.T) {
	s := Set{
		{Property: TokenRelease, Quote: "deletes the key only if it holds our value", Source: "https://example.org/README.md#release"},
		{Property: Renewal, Quote: "heartbeat keeps the lock", Source: "https://example.org/x.py#L10", Locks: []string{"etcd"}},
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Of(TokenRelease, "redis"); !ok {
		t.Error("a promise with no locks is every lock's")
	}
	if _, ok := s.Of(Renewal, "redis"); ok {
		t.Error("a promise limited to etcd was found for redis")
	}
	if _, ok := s.Of(Renewal, "etcd"); !ok {
		t.Error("a promise limited to etcd was not found for etcd")
	}
	for _, bad := range []Promise{
		{Property: "lock-delay", Quote: "q", Source: "s"},
		{Property: Renewal, Source: "s"},
		{Property: Renewal, Quote: "q"},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v passed its check", bad)
		}
	}
}
