package backends

import (
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// Settings are a story's settings for its lock's servers: each backend
// its own struct of yaml fields (RedisSettings, PostgresSettings;
// NoSettings for a backend that takes none). The scenario loader decodes
// a story's into its lock's backend's struct strictly, so a setting of
// another backend's servers is refused with its line; the backend's Start
// reads them from Options.Settings. A new setting is a field of its
// backend's struct, read in its Start: nothing outside its files.
type Settings interface {
	// Check refuses a value its servers cannot take, naming the field
	// (nil: they take them all).
	Check() *FieldError
}

// NoSettings are the settings of a backend whose servers take none
// (etcd, ZooKeeper): any setting a story gives them is refused.
type NoSettings struct{}

// Check takes them: there are none.
func (NoSettings) Check() *FieldError { return nil }

// replicated is a backend's settings that may give its nodes replicas.
type replicated interface{ Replicated() bool }

// Replicated says whether settings s give every node an asynchronous
// replica, which a failover or a replication-lag fault needs.
func Replicated(s Settings) bool {
	r, ok := s.(replicated)
	return ok && r.Replicated()
}

// persistent is a backend's settings that may have its nodes keep what
// they write on disk.
type persistent interface{ Persistent() bool }

// Persistent says whether settings s have every node keep what it writes
// in a file (Redis's append-only file), which a power-loss fault cuts
// back to what was synced.
func Persistent(s Settings) bool {
	p, ok := s.(persistent)
	return ok && p.Persistent()
}

// SettingsOf is o's settings if they are of type T, its backend's, else
// T's zero value: the servers a run starts for another backend's lock
// (PostgreSQL for the storage, Redis nodes for a fence) take their
// defaults.
func SettingsOf[T Settings](o Options) T {
	s, _ := o.Settings.(T)
	return s
}

// SettingNames lists the yaml names of the fields of settings s, in
// order.
func SettingNames(s Settings) []string {
	var out []string
	if s == nil {
		return nil
	}
	t := reflect.TypeOf(s)
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// SettingOwners lists the backends whose servers take the setting called
// name, by name (none: no backend's).
func SettingOwners(name string) []Backend {
	var out []Backend
	for _, b := range All() {
		for _, n := range SettingNames(b.Settings()) {
			if n == name {
				out = append(out, b)
			}
		}
	}
	return out
}

// schemaEnum gives the property name of a settings struct's schema js its
// values, the list its Check holds them to.
func schemaEnum(js *jsonschema.Schema, name string, values []string) {
	if p, ok := js.Properties.Get(name); ok {
		p.Enum = nil
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
	}
}
