package scenarios

// settings.go: a story's settings for its lock's servers (persistence,
// replicas, pgbouncer, a PostgreSQL timeout), written as fields of the
// scenario and decoded strictly into the lock's backend's own struct
// (backends.Settings): a setting of another backend's servers is refused
// with its line.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/backends"
)

// settingNames lists the settings of every registered backend, once each.
func settingNames() []string {
	var out []string
	for _, b := range backends.All() {
		for _, n := range backends.SettingNames(b.Settings()) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// settingsNode is the mapping of the fields of mapping n that are
// settings (nil: none).
func settingsNode(n *yaml.Node) *yaml.Node {
	names := settingNames()
	var out *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(names, n.Content[i].Value) {
			if out == nil {
				out = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Content[i].Line}
			}
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return out
}

// decodeSettings decodes the settings given over base into the struct of
// s's lock's backend: base is kept when it is of that struct (the
// story's, under its counterfactual), else the backend's defaults are.
// A setting of another backend's servers is an Error at its line; prefix
// names the block it stands in ("counterfactual.").
func (s *Scenario) decodeSettings(given *yaml.Node, base backends.Settings, prefix string) (backends.Settings, error) {
	b := s.backend()
	if b == nil {
		return nil, nil // validate names the lock
	}
	zero := b.Settings()
	if base == nil || reflect.TypeOf(base) != reflect.TypeOf(zero) {
		base = zero
	}
	if given == nil {
		return base, nil
	}
	own := backends.SettingNames(zero)
	for i := 0; i+1 < len(given.Content); i += 2 {
		if k := given.Content[i]; !slices.Contains(own, k.Value) {
			return nil, &Error{File: s.File, Line: k.Line, Field: prefix + k.Value, Msg: s.notASetting(k.Value, own)}
		}
	}
	p := reflect.New(reflect.TypeOf(zero))
	p.Elem().Set(reflect.ValueOf(base))
	if _, err := decodeStrict(given, p.Interface(), prefix, nil); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = s.File
		}
		return nil, err
	}
	return p.Elem().Interface().(backends.Settings), nil
}

// notASetting says that setting name is another backend's: whose, what
// the story's lock runs on, and the settings its servers take (own).
func (s *Scenario) notASetting(name string, own []string) string {
	var whose []string
	for _, b := range backends.SettingOwners(name) {
		whose = append(whose, string(b.Name()))
	}
	servers, _ := s.backend().Shape(s.Nodes, s.TTL.Duration)
	takes := "which take no settings"
	if len(own) > 0 {
		takes = "whose settings are " + strings.Join(own, ", ")
	}
	return fmt.Sprintf("a setting of the servers of the %s backend; lock %s runs on %s (%s backend), %s",
		strings.Join(whose, " or "), s.Lock, servers, s.backend().Name(), takes)
}

// validateSettings checks the story's settings: of its lock's backend's
// struct (nil: its defaults), with values its servers take.
func (s *Scenario) validateSettings() error {
	zero := s.backend().Settings()
	if s.Settings == nil {
		s.Settings = zero
	}
	if reflect.TypeOf(s.Settings) != reflect.TypeOf(zero) {
		return s.errAt("lock", "the story's settings are %T; lock %s runs on the %s backend, whose settings are %T",
			s.Settings, s.Lock, s.backend().Name(), zero)
	}
	if err := s.Settings.Check(); err != nil {
		return s.errAt(err.Field, "%s", err.Msg)
	}
	return nil
}

// counterfactualSettings are the settings of the counterfactual cf of s:
// the story's, with those its block gives replaced. A counterfactual whose
// lock runs on other servers takes none of the story's.
func (c *Counterfactual) counterfactualSettings(s, cf *Scenario) (backends.Settings, error) {
	if b := cf.backend(); b != nil && s.settings != nil && reflect.TypeOf(b.Settings()) != reflect.TypeOf(s.Settings) {
		return nil, s.errAt("counterfactual", "lock %s runs on the %s backend's servers: the story's settings (%s) are not theirs",
			cf.Lock, b.Name(), strings.Join(givenNames(s.settings), ", "))
	}
	return cf.decodeSettings(c.settings, s.Settings, "counterfactual.")
}

// givenNames lists the field names of mapping n.
func givenNames(n *yaml.Node) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// settingOverrides lists the settings the counterfactual block gives, as
// it changes them (CounterfactualScenario sets them: counterfactualSettings).
func (c *Counterfactual) settingOverrides(s *Scenario) []override {
	if c.settings == nil {
		return nil
	}
	var out []override
	for i := 0; i+1 < len(c.settings.Content); i += 2 {
		name := c.settings.Content[i].Value
		out = append(out, override{name, settingValue(s.Settings, name), c.settings.Content[i+1].Value, func(*Scenario) {}})
	}
	return out
}

// settingValue is the value of setting name in set, as a story says it
// ("" when set has none).
func settingValue(set backends.Settings, name string) string {
	if set == nil {
		return ""
	}
	v := reflect.ValueOf(set)
	out := ""
	yamlFields(v.Type(), nil, func(tag string, index []int) {
		if tag == name {
			out = fmt.Sprint(v.FieldByIndex(index).Interface())
		}
	})
	return out
}
