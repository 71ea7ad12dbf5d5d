package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/scenarios"
)

// TestEtcdServerVersions plays etcd-lock-service-expired-waiter on
// Debian's etcd 3.4.23 and on each version make test-deps builds: the
// 3.4 server grants the waiter whose lease expired (unsafe, as the story
// tells), and every later one refuses it (safe, expected there because
// the story is fixed_in etcd 3.5). Each run records the version it ran.
// A verdict the timing guard leaves unknown is played again, up to 3
// times.
func TestEtcdServerVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	sc := findStory(t, "etcd-lock-service-expired-waiter")
	debVersion := debianEtcd(t)
	cases := []struct {
		version string
		verdict checker.Verdict
		fixed   string
	}{{"", checker.Unsafe, ""}}
	for _, v := range env.EtcdBuilds {
		if _, err := env.EtcdBinary(v); err != nil {
			t.Fatalf("etcd %s: %v", v, err) // make test-deps builds it
		}
		cases = append(cases, struct {
			version string
			verdict checker.Verdict
			fixed   string
		}{v, checker.Safe, "etcd 3.5"})
	}
	for _, c := range cases {
		want := c.version
		if want == "" {
			want = debVersion
		}
		t.Run("etcd-"+want, func(t *testing.T) {
			var (
				out *Outcome
				err error
			)
			for attempt := 1; attempt <= 3; attempt++ {
				o := Options{Out: filepath.Join(t.TempDir(), "run"), Host: Host{Versions: map[clients.Backend]string{clients.EtcdBackend: c.version}}}
				if c.version == "" {
					o.Host = Host{}
				}
				start := time.Now()
				if out, err = Run(context.Background(), sc, o); err != nil {
					t.Fatal(err)
				}
				t.Logf("etcd %s: %s in %v (attempt %d): %s", want, out.Check.Verdict, time.Since(start).Round(time.Millisecond), attempt, out.Check.Summary)
				if out.Check.Verdict != checker.Unknown {
					break
				}
			}
			if out.Check.Verdict != c.verdict || out.Expected != c.verdict || !out.Matches() || out.Fixed != c.fixed || out.Versions["etcd"] != want {
				t.Errorf("etcd %s: verdict %s, expected %s, fixed %q, versions %v; want %s, fixed %q, etcd %s",
					want, out.Check.Verdict, out.Expected, out.Fixed, out.Versions, c.verdict, c.fixed, want)
			}
			// The story's second acquire, client 2's, is refused on a
			// fixed server: the steps went otherwise, as fixed_in allows.
			if (out.Departed != nil) != (c.fixed != "") {
				t.Errorf("etcd %s: departed %v", want, out.Departed)
			}
		})
	}
}

// TestClockedVersion: a story that moves an etcd member's clock runs,
// with no version asked, on the newest etcd build with the clock hook;
// asked for Debian's, or on the docker host, it is refused with why; a
// story that moves no member's clock keeps the default.
func TestClockedVersion(t *testing.T) {
	jump, pause := findStory(t, "etcd-member-clock-jump"), findStory(t, "etcd-pause")
	newest := env.EtcdBuilds[len(env.EtcdBuilds)-1]
	if _, err := env.EtcdBinary(newest); err != nil {
		t.Fatalf("etcd %s: %v", newest, err) // make test-deps builds it
	}
	h, err := Host{}.clockedFor(jump)
	if err != nil || h.Versions[clients.EtcdBackend] != newest {
		t.Errorf("the clock story with no version asked: %v, %v; want etcd %s", h.Versions, err, newest)
	}
	if h, err := (Host{}).clockedFor(pause); err != nil || h.Versions != nil {
		t.Errorf("etcd-pause: %v, %v; want the default (no version)", h.Versions, err)
	}
	debVersion := debianEtcd(t)
	_, err = Host{Versions: map[clients.Backend]string{clients.EtcdBackend: debVersion}}.clockedFor(jump)
	if err == nil || !strings.Contains(err.Error(), "no clock fault reaches an etcd member") {
		t.Errorf("the clock story on Debian's etcd %s: %v; want it refused with why", debVersion, err)
	}
	if _, err := (Host{Name: "docker"}).clockedFor(jump); err == nil || !strings.Contains(err.Error(), "play it on the local backend") {
		t.Errorf("the clock story on docker: %v; want it refused", err)
	}
}

// TestReferenceOnAFixedServer: a reference played on servers that have
// its story's bug fixed is expected safe there, as a run of its own is:
// etcd-lock-service-expired-waiter with lock etcd, judged against the
// Lock service on etcd 3.6.17.
func TestReferenceOnAFixedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	sc := findStory(t, "etcd-lock-service-expired-waiter")
	played, err := scenarios.Resolve(sc, scenarios.Changes{Lock: "etcd", NoCounterfactual: true})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := scenarios.Resolve(sc, scenarios.Changes{Lock: "etcd-lock-service", Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	v := env.EtcdBuilds[0]
	o := Options{Out: filepath.Join(t.TempDir(), "run"), Reference: ref.Scenario, Departures: true,
		Host: Host{Versions: map[clients.Backend]string{clients.EtcdBackend: v}}}
	out, err := Run(context.Background(), played.Scenario, o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reference == nil || out.Reference.Run == nil {
		t.Fatalf("no reference run: %+v", out.Reference)
	}
	if rr := out.Reference.Run; rr.Expected != checker.Safe || rr.Fixed == "" {
		t.Errorf("the reference on etcd %s: expected %s, fixed %q; want safe, fixed", v, rr.Expected, rr.Fixed)
	}
}

// debianEtcd is the version of Debian's etcd, the default.
func debianEtcd(t *testing.T) string {
	t.Helper()
	deb, err := env.EtcdBinary("")
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.EtcdVersion(deb)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// findStory is the catalogue's story name.
func findStory(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
