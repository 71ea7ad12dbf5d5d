// newest.go: the newest upstream release of each library the page plays
// (docs/findings/newest.yaml, checked by hand), beside the version
// played, so that a reader knows whether a row is about today's release.

package findings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Newest is one library's version played and its newest upstream
// release, as a person read them on Checked.
type Newest struct {
	// Library is the key of Subject.library (a program's folder, a
	// registered lock's name) or a server's; Package as users install it.
	Library string `yaml:"library"`
	Package string `yaml:"package"`
	Played  string `yaml:"played"`
	Newest  string `yaml:"newest"`
	Source  string `yaml:"source"`
	Checked string `yaml:"checked"`
	Note    string `yaml:"note,omitempty"`
}

// LoadNewest reads the list at path; none when there is no file.
func LoadNewest(path string) ([]Newest, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Newest
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, n := range out {
		if n.Library == "" || n.Played == "" || n.Newest == "" {
			return nil, fmt.Errorf("%s: %q: expected library, played and newest", path, n.Library)
		}
	}
	return out, nil
}

// SetNewest gives the page the newest releases to name.
func (r *Report) SetNewest(ns []Newest) { r.newest = ns }

// serverKeys are the newest list's keys of each backend's server.
var serverKeys = map[string]string{"redis": "redis-server", "postgres": "postgresql", "etcd": "etcd-server", "zookeeper": "zookeeper", "memcached": "memcached"}

// NewestLine says, for subject s, each of its libraries' version played
// and newest release ("redlock (npm): played 5.0.0-beta.2; newest
// 5.0.0-beta.2 (checked 2026-12-07, SOURCE)"); "" when none is known.
func (r *Report) NewestLine(s Subject) string {
	var lines []string
	lib, server := s.library(), serverKeys[s.Servers]
	for _, n := range r.newest {
		if n.Library != lib && n.Library != server {
			continue
		}
		line := fmt.Sprintf("%s: played %s; newest %s (checked %s, %s)", n.Package, n.Played, n.Newest, n.Checked, n.Source)
		if n.Note != "" {
			line += ": " + n.Note
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, ". ")
}
