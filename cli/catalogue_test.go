package cli

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/scenarios"
)

// TestListFitsHundredColumns: sim list and sim locks fit 100 columns,
// each row's last column wrapped under itself with none of its words
// lost; --wide prints a row a line, the text whole.
func TestListFitsHundredColumns(t *testing.T) {
	all, err := scenarios.Match(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"locks", "--mutants"}} {
		code, out, errb := sim(t, args...)
		if code != 0 {
			t.Fatalf("sim %v: exit %d\n%s", args, code, errb)
		}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if len(l) > listWidth {
				t.Errorf("sim %v: a line of %d columns: %q", args, len(l), l)
			}
		}
	}
	_, out, _ := sim(t, "list")
	for _, sc := range all {
		want := sc.Name + sc.Lock + string(sc.Expected) + sc.Fault
		if got := rowText(out, sc.Name); got != strings.Join(strings.Fields(want), "") {
			t.Errorf("sim list's row for %s, joined: %q", sc.Name, got)
		}
	}
	_, wide, _ := sim(t, "list", "--wide")
	lines := strings.Split(strings.TrimSuffix(wide, "\n"), "\n")
	longest := 0
	for _, l := range lines {
		longest = max(longest, len(l))
	}
	if len(lines) != len(all)+1 || longest <= listWidth {
		t.Errorf("sim list --wide: %d lines for %d scenarios, the longest %d columns: want one a scenario, unwrapped",
			len(lines), len(all), longest)
	}
	_, locks, _ := sim(t, "locks", "--mutants")
	for _, n := range clients.Names() {
		s, _ := clients.Lookup(n)
		if got := rowText(locks, n); !strings.HasSuffix(got, strings.Join(strings.Fields(s.Doc), "")) {
			t.Errorf("sim locks' row for %s, joined: %q, want it to end with %q", n, got, s.Doc)
		}
	}
}

// rowText is the row of out that starts with name, its continuation
// lines (those starting with a space) joined on, without spaces (a word
// broken at a line's end joins up again).
func rowText(out, name string) string {
	var words []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, name+" "):
			in = true
		case in && strings.HasPrefix(l, " "):
		default:
			in = false
		}
		if in {
			words = append(words, strings.Fields(l)...)
		}
	}
	return strings.Join(words, "")
}

// TestWrap: words stay whole where they fit, a word longer than the
// line breaks after a '_' or '-', else at the width.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want []string
	}{
		{"a bb ccc dddd", 6, []string{"a bb", "ccc", "dddd"}},
		{"none (server idle_in_transaction_session_timeout shorter)", 12, []string{"none (server", "idle_in_",
			"transaction_", "session_", "timeout", "shorter)"}},
		{"abcdefghij x", 4, []string{"abcd", "efgh", "ij x"}},
		{"one line", 0, []string{"one line"}},
	} {
		if got := wrap(c.s, c.n); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
