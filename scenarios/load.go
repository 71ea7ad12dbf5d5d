// load.go turns a scenario file into a Scenario: Parse decodes it
// (decode.go), settles its defaults and validates it (validate.go).

package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
)

// Error is a bad scenario: it names the file, line and field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// Parse reads one scenario from YAML and validates it. file names it in
// errors.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
			fmt.Sscan(m[1], &line)
			msg = m[2]
		}
		return nil, &Error{File: file, Line: line, Msg: "not valid YAML: " + msg}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "empty file"}
	}
	type plain Scenario
	var p plain
	givenAt, err := decodeStrict(doc.Content[0], &p, "", nil, settingNames()...)
	if err == nil {
		sc := Scenario(p)
		sc.File, sc.givenAt, sc.settings = file, givenAt, settingsNode(doc.Content[0])
		var settled *Scenario
		if settled, err = settle(&sc); err == nil {
			return settled, nil
		}
	}
	var e *Error
	if errors.As(err, &e) {
		e.File = file
	}
	return nil, err
}

func (s *Scenario) applyDefaults() {
	if s.Clients == 0 {
		s.Clients = 2
	}
	if s.TTL.Duration == 0 {
		s.TTL.Duration = DefaultTTL
	}
	if s.NodeTimeout.Duration == 0 {
		s.NodeTimeout.Duration = DefaultNodeTimeout
	}
	if s.Key == "" {
		s.Key = "L"
	}
	if s.Margin.Duration == 0 {
		s.Margin.Duration = DefaultMargin
	}
	if s.Nodes == 0 {
		if spec, err := clients.Lookup(s.Lock); err == nil {
			s.Nodes = LockNodes(nil, spec)
		}
	}
}

// backend is the backend of the scenario's lock (nil if either is
// unknown).
func (s *Scenario) backend() backends.Backend {
	spec, err := clients.Lookup(s.Lock)
	if err != nil {
		return nil
	}
	return backends.Of(spec)
}

// ServerOptions are the scenario's settings for its servers, as a
// backend checks them and starts its servers with them.
func (c *Conditions) ServerOptions() backends.Options {
	return backends.Options{Nodes: c.Nodes, Clients: c.Clients, Fence: c.Fence, Settings: c.Settings}
}
