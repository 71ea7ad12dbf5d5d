// Package cost measures what a lock costs, on real servers on this
// machine, in one run (sim cost): each lock option's acquire and release
// latency with one client, its locks per second with four clients
// contending for one lock and for four, the extra cost of each defence a
// story can give it (fenced storage, token-cas, a lease check, a
// watchdog), and beside them the floors (one Redis round trip, SELECT 1,
// an etcd Get, a ZooKeeper exists, a memcached mn) that make the figures relative. It
// also maps the verdicts the stories give each option and defence
// (Marks), so that price and safety can be read together.
//
// Every loop is bounded by the point's duration; every server it starts
// is stopped before Run returns, interrupted or not.
package cost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
)

// Option is one lock with one setting of its servers: what a row of the
// cost table measures.
type Option struct {
	// Key names it: the lock, and its setting when the lock has several
	// ("redlock/always", "postgres-xact/pgbouncer").
	Key string `json:"key"`
	// Lock is the registered lock.
	Lock string `json:"lock"`
	// Setting is the servers' setting in words ("" for the default):
	// "persistence everysec", "via pgbouncer (pool_mode=session)".
	Setting string `json:"setting,omitempty"`
	// Settings are its servers' settings (nil: the backend's defaults).
	Settings backends.Settings `json:"-"`
}

// DefaultLocks are the locks sim cost measures when --locks is not
// given: the debate's, each with the options of its servers.
var DefaultLocks = []string{"redis", "redlock", "redsync", "etcd", "zookeeper", "postgres-session", "postgres-xact"}

// The pgbouncer pool mode each PostgreSQL lock is measured through: the
// one it is correct under (a session lock needs session pooling; an xact
// lock lives in one transaction, which transaction pooling keeps on one
// server connection).
var pgbouncerMode = map[string]string{"postgres-session": "session", "postgres-xact": "transaction"}

// OptionsOf lists the options of locks, in order: Redlock with each
// persistence (none, everysec, always), a PostgreSQL lock direct and
// through pgbouncer, any other lock as its servers start by default. An
// unknown lock is an input error of --locks.
func OptionsOf(locks []string) ([]Option, error) {
	var out []Option
	for _, l := range locks {
		spec, err := clients.Lookup(l)
		if err != nil {
			return nil, input.Errorf("locks", "", err.Error())
		}
		if backends.Of(spec) == nil {
			return nil, input.Errorf("locks", "", fmt.Sprintf("lock %s: its backend %q is not registered", l, spec.Backend))
		}
		switch {
		case l == "redlock":
			for _, p := range []string{"none", "everysec", "always"} {
				out = append(out, Option{Key: l + "/" + p, Lock: l, Setting: "persistence " + p,
					Settings: backends.RedisSettings{Persistence: p}})
			}
		case pgbouncerMode[l] != "":
			mode := pgbouncerMode[l]
			out = append(out, Option{Key: l, Lock: l, Settings: backends.PostgresSettings{}},
				Option{Key: l + "/pgbouncer", Lock: l, Setting: "via pgbouncer (pool_mode=" + mode + ")",
					Settings: backends.PostgresSettings{Pgbouncer: mode}})
		default:
			out = append(out, Option{Key: l, Lock: l, Settings: backends.Of(spec).Settings()})
		}
	}
	return out, nil
}

// ParseLocks reads --locks: names separated by commas, each once; empty
// gives DefaultLocks.
func ParseLocks(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultLocks, nil
	}
	var out []string
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if _, err := clients.Lookup(l); err != nil {
			return nil, input.Errorf("locks", "", err.Error())
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// optionOf is the option of opts that a story told with lock and
// settings runs on: the same lock, the same persistence, the same
// pgbouncer pool mode; "" when none is.
func optionOf(opts []Option, lock string, settings backends.Settings) string {
	want := settingKey(settings)
	for _, o := range opts {
		if o.Lock == lock && settingKey(o.Settings) == want {
			return o.Key
		}
	}
	return ""
}

// settingKey is the part of a server's settings that the options tell
// apart: the Redis persistence (none when unset) and the pgbouncer pool
// mode.
func settingKey(s backends.Settings) string {
	switch s := s.(type) {
	case backends.RedisSettings:
		if s.Persistence == "" {
			return "persistence none"
		}
		return "persistence " + s.Persistence
	case backends.PostgresSettings:
		return "pgbouncer " + s.Pgbouncer
	}
	return ""
}
