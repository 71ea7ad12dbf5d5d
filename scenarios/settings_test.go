package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/locksim/locksim/backends"
)

// storyOn is the test story good played with lock, and the extra lines.
func storyOn(lock, extra string) string {
	return strings.Replace(good, "lock: redlock", "lock: "+lock, 1) + extra
}

// TestSettingsOfAnotherBackendRefused: a setting the story's servers do
// not take is one Error naming the file, the line and the field, in the
// story and in its counterfactual block; a bad value of one they take
// too.
func TestSettingsOfAnotherBackendRefused(t *testing.T) {
	for _, c := range []struct {
		name, yaml, field, want string
		line                    int
	}{
		{"persistence on PostgreSQL", storyOn("postgres-session", "persistence: always\n"), "persistence", "a setting of the servers of the redis or sentinel backend; lock postgres-session runs on one PostgreSQL server", 8},
		{"pgbouncer on Redis", storyOn("redis", "pgbouncer: transaction\n"), "pgbouncer", "lock redis runs on 1 Redis node(s) (redis backend), whose settings are persistence, replicas", 8},
		{"replicas on etcd", storyOn("etcd", "replicas: true\n"), "replicas", "(etcd backend), which take no settings", 8},
		{"in the counterfactual", storyOn("redlock", "persistence: none\ncounterfactual:\n  change: x\n  idle_session_timeout: 1s\n"), "counterfactual.idle_session_timeout", "a setting of the servers of the postgres backend", 11},
		{"a bad value", storyOn("redlock", "persistence: sometimes\n"), "persistence", `expected none, everysec or always, got "sometimes"`, 8},
		{"a bad pool mode", storyOn("postgres-session", "pgbouncer: statement\n"), "pgbouncer", "expected transaction or session", 8},
		{"a misspelt setting", storyOn("postgres-session", "pgbouncr: session\n"), "pgbouncr", "did you mean pgbouncer?", 8},
		{"a duration that is not", storyOn("postgres-xact", "idle_session_timeout: soon\n"), "idle_session_timeout", "expected a duration like 500ms or 10s", 8},
	} {
		_, err := Parse("x.yaml", []byte(c.yaml))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %v, want an Error", c.name, err)
			continue
		}
		if e.File != "x.yaml" || e.Line != c.line || e.Field != c.field || !strings.Contains(e.Msg, c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %q (line %d, field %q), want line %d, field %q, %q", c.name, err, e.Line, e.Field, c.line, c.field, c.want)
		}
	}
}

// TestSettingsDecodeIntoTheBackendsStruct: the settings a story gives are
// its lock's backend's struct; none given are its defaults; Sentinel's
// servers take Redis's settings; a counterfactual replaces the settings
// it gives and keeps the others.
func TestSettingsDecodeIntoTheBackendsStruct(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(storyOn("redlock", "persistence: everysec\nreplicas: true\n"+
		"counterfactual:\n  change: no persistence\n  persistence: none\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Settings, (backends.RedisSettings{Persistence: "everysec", Replicas: true}); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}
	cf, err := sc.CounterfactualScenario()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cf.Settings, (backends.RedisSettings{Persistence: "none", Replicas: true}); got != want {
		t.Errorf("counterfactual settings %+v, want %+v", got, want)
	}
	if got := strings.Join(sc.CounterfactualChanges(), "; "); got != "persistence: everysec -> none" {
		t.Errorf("changes %q", got)
	}
	for lock, want := range map[string]backends.Settings{"postgres-session": backends.PostgresSettings{}, "etcd": backends.NoSettings{},
		"redis-sentinel": backends.RedisSettings{}} {
		sc, err := Parse("x.yaml", []byte(storyOn(lock, "")))
		if err != nil {
			t.Fatal(err)
		}
		if sc.Settings != want {
			t.Errorf("%s: settings %#v, want %#v", lock, sc.Settings, want)
		}
	}
	if _, err := Parse("x.yaml", []byte(storyOn("redis-sentinel", "replicas: true\npersistence: always\n"))); err != nil {
		t.Errorf("Sentinel refuses Redis's settings: %v", err)
	}
}

// TestEveryCatalogueSettingIsItsBackends: the catalogue's stories that set
// their servers decode into their backends' structs (TestCatalogueLoads
// loads them all).
func TestEveryCatalogueSettingIsItsBackends(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	set := 0
	for _, sc := range all {
		if sc.settings != nil {
			set++
		}
		if b := sc.backend(); b == nil || sc.Settings == nil || sc.Settings.Check() != nil {
			t.Errorf("%s: settings %#v", sc.Name, sc.Settings)
		}
	}
	if set < 10 {
		t.Errorf("%d stories set their servers, want the catalogue's 10 or more", set)
	}
}
