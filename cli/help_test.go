package cli

import (
	"strings"
	"testing"
)

// TestHelpCompletionVersion: every command has help (exit 0, on stdout,
// naming its flags); the completion scripts; unknown commands are one line
// with a suggestion.
func TestHelpCompletionVersion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"usage:", "matrix", "completion", "exit codes"}},
		{[]string{"help", "run"}, []string{"usage: sim run", "--lock X", "--counterfactual", "--repeat N", "--junit FILE", "-q, --quiet"}},
		{[]string{"run", "--help"}, []string{"usage: sim run", "--lock X"}},
		{[]string{"matrix", "-h"}, []string{"usage: sim matrix", "--locks a,b,c", "--markdown FILE", "--html FILE", "n/a"}},
		{[]string{"sweep", "--help"}, []string{"usage: sim sweep", "--param KEY=FROM..TO", "--points N"}},
		{[]string{"check", "-help"}, []string{"usage: sim check DIR", "--expect V"}},
		{[]string{"locks", "--help"}, []string{"--mutants"}},
		{[]string{"help", "completion"}, []string{"bash", "zsh", "fish"}},
		{[]string{"completion", "bash"}, []string{"bash completion", "__start_sim"}},
		{[]string{"completion", "zsh"}, []string{"#compdef sim"}},
		{[]string{"completion", "fish"}, []string{"complete -c sim"}},
		{[]string{"--version"}, []string{"sim "}},
	} {
		code, out, errb := sim(t, c.args...)
		if code != 0 || errb != "" {
			t.Errorf("sim %v: exit %d, stderr %q", c.args, code, errb)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("sim %v: stdout lacks %q", c.args, w)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rnu"}, `sim: unknown command "rnu"; did you mean run? (sim help lists them)`},
		{[]string{"completion", "bahs"}, `did you mean bash?`},
		{[]string{"help", "fly"}, `no help topic "fly"`},
	} {
		code, out, errb := sim(t, c.args...)
		if code != exitHarness || out != "" || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("sim %v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, errb, c.want)
		}
	}
	// sim alone, or a command that only groups others: the help, on
	// stderr, exit 2.
	for _, args := range [][]string{nil, {"completion"}} {
		if code, out, errb := sim(t, args...); code != exitHarness || out != "" || !strings.Contains(errb, "usage:") {
			t.Errorf("sim %v: exit %d, stdout %q, stderr %.60q", args, code, out, errb)
		}
	}
}

// TestFlagSpellings: the spellings Go's flag package took still work
// (-out DIR, -expect=V, --q), and flags go before or after the names.
func TestFlagSpellings(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-expect", "fine", "redlock-clock-jump"},
		{"run", "redlock-clock-jump", "-expect=fine"},
		{"run", "--q", "-expect", "fine", "redlock-clock-jump", "-out", t.TempDir()},
	} {
		code, _, errb := sim(t, args...)
		if code != exitHarness || !strings.Contains(errb, `--expect: expected safe, unsafe, leaked or hung, got "fine"`) {
			t.Errorf("sim %v: exit %d, stderr %q", args, code, errb)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "redlock-clock-jump", "--repeat", "x"}, `invalid value "x" for flag --repeat: parse error`},
		{[]string{"run", "redlock-clock-jump", "--out"}, "flag needs an argument: --out"},
		{[]string{"run", "redlock-clock-jump", "--counterfatcual"}, "did you mean --counterfactual?"},
		// As typed, and a suggestion only for a plausible typo.
		{[]string{"run", "x", "--ttl", "1s"}, "sim: flag provided but not defined: --ttl (sim run --help lists the flags)\n"},
		{[]string{"run", "x", "-ttl", "1s"}, "sim: flag provided but not defined: -ttl (sim run --help lists the flags)\n"},
		{[]string{"run", "x", "-x"}, "sim: flag provided but not defined: -x (sim run --help lists the flags)\n"},
		{[]string{"run", "x", "--trails", "3"}, "sim: flag provided but not defined: --trails; did you mean --trials? (sim run --help lists the flags)\n"},
		{[]string{"sweep", "gen-pause", "--pionts", "3"}, "flag provided but not defined: --pionts; did you mean --points?"},
		{[]string{"sweep", "gen-pause", "--param", "pause=0.2ttl..3ttl", "--x", "struck"}, `--x: expected planned or measured, got "struck"`},
		{[]string{"sweep", "gen-pause", "--param", "ttl=50ms..200ms", "--x", "measured"}, "--x measured: ttl is no fault's size"},
	} {
		code, _, errb := sim(t, c.args...)
		if code != exitHarness || !strings.Contains(errb, c.want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("sim %v: exit %d, stderr %q; want one line with %q", c.args, code, errb, c.want)
		}
	}
}
