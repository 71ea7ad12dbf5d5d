package env

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func startTestMemcached(t *testing.T) *Memcached {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts memcached")
	}
	if _, err := exec.LookPath(memcachedPath()); err != nil {
		t.Fatal("memcached not installed: make test-deps installs it (apt-get install memcached)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := StartMemcached(ctx, "A", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// mcSet adds key for ttl whole seconds with the meta protocol's add mode.
func mcSet(t *testing.T, m *Memcached, key string, ttl int) {
	t.Helper()
	if got, err := mcSend(m, "ms "+key+" 1 ME T"+strconv.Itoa(ttl)+"\r\nx"); err != nil || got != "HD" {
		t.Fatalf("add %s: %q, %v", key, got, err)
	}
}

// mcHas says whether key is there.
func mcHas(t *testing.T, m *Memcached, key string) bool {
	t.Helper()
	got, err := mcSend(m, "mg "+key)
	if err != nil {
		t.Fatalf("mg %s: %v", key, err)
	}
	return got == "HD"
}

func mcSend(m *Memcached, line string) (string, error) {
	return memcachedCommand(m.Addr, line, time.Second)
}

// A real memcached: it answers, a paused one does not until resumed, a
// crash-restart comes back on its port with every key gone, Reset
// empties it.
func TestMemcachedFaults(t *testing.T) {
	m := startTestMemcached(t)
	if v := MemcachedVersion(); !strings.HasPrefix(v, "1.") {
		t.Errorf("MemcachedVersion() = %q, want 1.x", v)
	}
	mcSet(t, m, "lock", 30)
	if !mcHas(t, m, "lock") {
		t.Fatal("the key just added is not there")
	}

	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := memcachedCommand(m.Addr, "mg lock", 300*time.Millisecond); err == nil {
		t.Error("a paused memcached answered")
	}
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	if !mcHas(t, m, "lock") {
		t.Error("the key is gone after a pause")
	}

	port := m.Port
	if err := m.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m.Port != port {
		t.Errorf("restarted on port %d, want %d", m.Port, port)
	}
	if mcHas(t, m, "lock") {
		t.Error("the key survived a crash-restart: memcached keeps nothing on disk")
	}

	mcSet(t, m, "again", 30)
	if err := m.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if mcHas(t, m, "again") {
		t.Error("Reset left a key")
	}
}

// memcached times expiry on CLOCK_MONOTONIC: a jump of the shim's wall
// clock past a key's TTL leaves it, a drift of both clocks expires it
// early in real time.
func TestMemcachedClock(t *testing.T) {
	m := startTestMemcached(t)
	mcSet(t, m, "jumped", 5)
	m.Clock().Jump(time.Hour)
	time.Sleep(1200 * time.Millisecond) // a tick of memcached's clock
	if !mcHas(t, m, "jumped") {
		t.Error("a wall-clock jump of an hour expired a 5 s key")
	}
	m.Clock().Reset()

	mcSet(t, m, "drifted", 4)
	start := time.Now()
	m.Clock().SetRate(4)
	for mcHas(t, m, "drifted") {
		if time.Since(start) > 3*time.Second {
			t.Fatal("a 4 s key was there after 3 s of real time with the server's clocks at rate 4")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("a 4 s key expired after %v of real time at rate 4", time.Since(start).Round(time.Millisecond))
}
