// catalogue.go holds the built-in scenarios (the embedded *.yaml) and
// finds them by name or pattern.

package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.yaml
var catalogue embed.FS

// Catalogue loads every built-in scenario, sorted by name. A duplicate name
// is an error.
func Catalogue() ([]*Scenario, error) {
	entries, err := catalogue.ReadDir(".")
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var out []*Scenario
	for _, e := range entries {
		data, err := catalogue.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		sc, err := Parse("scenarios/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[sc.Name]; dup {
			return nil, &Error{File: sc.File, Line: sc.givenAt["name"], Field: "name", Msg: fmt.Sprintf("%q is also the name in %s", sc.Name, prev)}
		}
		seen[sc.Name] = sc.File
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Text is the YAML of the built-in scenario in file (its File,
// "scenarios/NAME.yaml"), as written.
func Text(file string) ([]byte, error) {
	return catalogue.ReadFile(strings.TrimPrefix(file, "scenarios/"))
}

// NotFoundError says no scenario has that name; Close lists near names.
type NotFoundError struct {
	Name  string
	Close []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no scenario named %q", e.Name)
	if len(e.Close) > 0 {
		msg += "; did you mean: " + strings.Join(e.Close, ", ")
	}
	return msg + " (sim list shows them all)"
}

// Find returns the built-in scenario called name, or loads a file when
// name is a path (it contains a '/' or ends in .yaml or .yml).
func Find(name string) (*Scenario, error) {
	if strings.Contains(name, "/") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, &Error{File: name, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
		}
		return Parse(filepath.Clean(name), data)
	}
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sc := range all {
		if sc.Name == name {
			return sc, nil
		}
		names = append(names, sc.Name)
	}
	return nil, &NotFoundError{Name: name, Close: closeNames(name, names)}
}

// Match returns the built-in scenarios whose name matches the regex.
func Match(pattern string) ([]*Scenario, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad pattern %q: %v", pattern, err)
	}
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, sc := range all {
		if re.MatchString(sc.Name) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// closeNames returns up to five names within a small edit distance of
// name, or that contain it, closest first.
func closeNames(name string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		d := EditDistance(name, n)
		if strings.Contains(n, name) && len(name) >= 3 {
			d = min(d, 2)
		}
		if d <= max(3, len(name)/3) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 5; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// EditDistance is the Levenshtein distance between a and b (for "did you
// mean" suggestions).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
