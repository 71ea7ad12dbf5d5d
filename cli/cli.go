package cli

// cli.go: the command tree (github.com/spf13/cobra) and what every
// command shares: help, the arguments' and flags' one-line errors, the
// version, completion, and the reaping of what killed runs left behind.

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/scenarios"
)

// overview heads sim help; footer ends it.
const (
	overview = `sim: lock-safety scenarios on real servers`
	footer   = `Each run directory holds history.jsonl, result.json, summary.md, report.html
(verdict, evidence, timeline), timeline.svg, junit.xml and history.html.

exit codes: 0 verdicts as expected, 1 a verdict differed, 2 the harness failed
(bad input, a server that would not start, a story that did not happen as
told), 130 interrupted.`
)

// newRoot builds the command tree.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:     "sim",
		Short:   "lock-safety scenarios on real servers",
		Version: version(),
		// sim alone: its help, on stderr, exit 2; sim NAME: an unknown
		// command.
		Args: unknownCommand,
		RunE: groupHelp,
		// main.go's exit says the errors, in one line each.
		SilenceErrors: true,
		SilenceUsage:  true,
		// Every start removes what killed runs left behind (sim clean),
		// except the commands that only print something.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if quietCommand(cmd) {
				return
			}
			if r, err := env.Reap(env.ReapRoots()...); !r.Empty() || err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "sim: %s\n", reapedLine(r, err))
			}
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { fmt.Fprint(cmd.OutOrStdout(), helpText(cmd)) })
	root.SetUsageFunc(func(cmd *cobra.Command) error { _, err := fmt.Fprint(cmd.OutOrStderr(), helpText(cmd)); return err })
	root.SetFlagErrorFunc(flagError)
	root.Flags().BoolP("version", "v", false, "the version and the commit it was built from")
	root.AddCommand(
		listCmd(), explainCmd(), runCmd(), matrixCmd(), reportCmd(), checkCmd(),
		locksCmd(), schemaCmd(), sweepCmd(), huntCmd(), costCmd(), findingsCmd(), workshopCmd(), cleanCmd(),
		&cobra.Command{Use: "version", Short: "the version and the commit it was built from", Hidden: true,
			Args: cobra.NoArgs, Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version()) }},
	)
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "this text, or a command's help (also: sim COMMAND --help)",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, s := range cmd.Root().Commands() {
				if s.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 || target == nil {
				return fmt.Errorf("no help topic %q (sim help lists the commands)", strings.Join(args, " "))
			}
			return target.Help()
		},
	})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var helpFlags func(cmd *cobra.Command)
	helpFlags = func(cmd *cobra.Command) {
		cmd.InitDefaultHelpFlag()
		cmd.Flags().Lookup("help").Usage = "this help"
		for _, s := range cmd.Commands() {
			helpFlags(s)
		}
	}
	helpFlags(root)
	for _, s := range root.Commands() {
		if s.Name() == "completion" {
			s.Use = "completion bash|zsh|fish|powershell"
			s.Short = "print a shell completion script (sim completion bash --help says how to load it)"
			s.Example = "  source <(sim completion bash)\n  sim completion zsh > \"${fpath[1]}/_sim\"\n  sim completion fish > ~/.config/fish/completions/sim.fish"
			// It only groups the scripts: alone, its help (exit 2).
			s.Args, s.RunE = unknownCommand, groupHelp
		}
	}
	return root
}

// groupHelp is what a command that only groups others (sim, sim
// completion) does alone: it prints its help on stderr, exit 2.
func groupHelp(cmd *cobra.Command, _ []string) error {
	fmt.Fprint(cmd.ErrOrStderr(), helpText(cmd))
	return errFailed
}

// quietCommand says whether cmd only prints something, so that a start
// of it does not reap (sim clean reaps itself, and says what it removed):
// sim alone (its help), and clean, version, help, completion and cobra's
// completion requests, with their subcommands. Every other command reaps.
func quietCommand(cmd *cobra.Command) bool {
	if !cmd.HasParent() {
		return true // sim alone: its help
	}
	for ; cmd.HasParent(); cmd = cmd.Parent() {
		switch cmd.Name() {
		case "clean", "version", "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// unknownCommand is the Args of a command that only groups others: an
// argument is an unknown command, refused in one line naming the closest
// ones (cobra's own message spans several lines).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	what, list := fmt.Sprintf("%q", args[0]), "sim help lists them"
	if cmd.HasParent() {
		what, list = fmt.Sprintf("%q for %s", args[0], cmd.CommandPath()), cmd.CommandPath()+" --help lists them"
	}
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		return fmt.Errorf("unknown command %s; did you mean %s? (%s)", what, strings.Join(s, " or "), list)
	}
	return fmt.Errorf("unknown command %s (%s)", what, list)
}

// usage is cobra's validator v saying, when the arguments do not fit,
// what sim has always said (a usage line).
func usage(v cobra.PositionalArgs, msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if v(cmd, a) != nil {
			return errors.New(msg)
		}
		return nil
	}
}

// normalizeFlags keeps the flag spellings sim has always taken: Go's flag
// package read -out DIR as --out DIR, and --q as -q.
func normalizeFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "--") || !strings.HasPrefix(a, "-"):
			if strings.HasPrefix(a, "--") && len(name) == 1 && cmd.Flags().Lookup(name) == nil && cmd.Flags().ShorthandLookup(name) != nil {
				out[i] = a[1:]
			}
		case len(name) > 1 && (name == "help" || cmd.Flags().Lookup(name) != nil):
			out[i] = "-" + a
		}
	}
	return out
}

// flagError words a flag's error as Go's flag package did, in one line
// (cobra's SetFlagErrorFunc): bad input, exit 2.
func flagError(cmd *cobra.Command, err error) error {
	var (
		notDefined *pflag.NotExistError
		needsValue *pflag.ValueRequiredError
		invalid    *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &notDefined):
		// As typed: --name, or -x (-ttl, Go's one-dash spelling of a flag
		// sim does not have, is read as the shorthands t, t and l).
		name, typed := notDefined.GetSpecifiedName(), "--"+notDefined.GetSpecifiedName()
		if s := notDefined.GetSpecifiedShortnames(); s != "" {
			name, typed = s, "-"+s
		}
		msg := "flag provided but not defined: " + typed
		if near := nearFlags(cmd, name); len(near) > 0 {
			msg += "; did you mean " + strings.Join(near, " or ") + "?"
		}
		return fmt.Errorf("%s (%s --help lists the flags)", msg, cmd.CommandPath())
	case errors.As(err, &needsValue):
		name := needsValue.GetSpecifiedName()
		if f := needsValue.GetFlag(); f != nil {
			name = f.Name
		}
		return fmt.Errorf("flag needs an argument: --%s", name)
	case errors.As(err, &invalid):
		why := "parse error"
		var num *strconv.NumError
		var own valueError
		switch {
		case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
			why = "value out of range"
		case errors.As(err, &own):
			why = string(own)
		}
		return fmt.Errorf("invalid value %q for flag --%s: %s", invalid.GetValue(), invalid.GetFlag().Name, why)
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}

// nearFlags is the flag of cmd that name plausibly meant
// (scenarios.Closest: the nearest, on a tie all of them), as --name.
func nearFlags(cmd *cobra.Command, name string) []string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	near := scenarios.Closest(name, names)
	for i, n := range near {
		near[i] = "--" + n
	}
	return near
}

// helpText is a command's help: how to call it, what it does, its
// commands or flags, examples.
func helpText(cmd *cobra.Command) string {
	var b strings.Builder
	if !cmd.HasParent() {
		fmt.Fprintf(&b, "%s\n\nusage: sim COMMAND [ARGS] [flags]\n\ncommands:\n", overview)
	} else {
		fmt.Fprintf(&b, "usage: %s\n", cmd.UseLine())
		if text := strings.TrimSpace(cmd.Long); text != "" {
			fmt.Fprintf(&b, "\n%s\n", text)
		} else if cmd.Short != "" {
			fmt.Fprintf(&b, "\n%s\n", cmd.Short)
		}
		if cmd.HasAvailableSubCommands() {
			b.WriteString("\ncommands:\n")
		}
	}
	if cmd.HasAvailableSubCommands() {
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				b.WriteString(entry(s.Use, s.Short))
			}
		}
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\nflags:\n%s", cmd.LocalFlags().FlagUsagesWrapped(80))
	}
	if cmd.Example != "" {
		fmt.Fprintf(&b, "\nexamples:\n%s\n", strings.TrimRight(cmd.Example, "\n"))
	}
	if !cmd.HasParent() {
		fmt.Fprintf(&b, "\nsim COMMAND --help (or sim help COMMAND) shows a command's arguments and flags.\n\n%s\n", footer)
	} else if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n%s COMMAND --help shows a command's flags.\n", cmd.CommandPath())
	}
	return b.String()
}

// entry is one command of a help's list: its use in the first column,
// what it does in the second, wrapped.
func entry(use, short string) string {
	const col, width = 30, 80
	var b strings.Builder
	b.WriteString("  " + use)
	if len(use)+2 >= col {
		b.WriteString("\n")
		b.WriteString(strings.Repeat(" ", col))
	} else {
		b.WriteString(strings.Repeat(" ", col-len(use)-2))
	}
	n := col
	for i, w := range strings.Fields(short) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n" + strings.Repeat(" ", col))
			n = col
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String() + "\n"
}

// version is the module's version and the commit it was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "sim (no build information)"
	}
	v := "sim " + bi.Main.Version
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			v += ", commit " + st.Value
		case "vcs.modified":
			if st.Value == "true" {
				v += " (with uncommitted changes)"
			}
		}
	}
	return v
}

// completeScenarios completes a scenario name.
func completeScenarios(filter func(*scenarios.Scenario) bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		all, err := scenarios.Catalogue()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, sc := range all {
			if filter == nil || filter(sc) {
				out = append(out, cobra.CompletionWithDesc(sc.Name, sc.Title))
			}
		}
		// A scenario may also be a file of one's own.
		return out, cobra.ShellCompDirectiveDefault
	}
}

// completeLocks completes a lock name (after the last comma, for a list).
func completeLocks(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	done := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done = toComplete[:i+1]
	}
	var out []cobra.Completion
	for _, n := range clients.Names() {
		s := clients.Registered(n)
		out = append(out, cobra.CompletionWithDesc(done+n, string(s.Backend)+": "+s.Doc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeVerdicts completes --expect.
func completeVerdicts(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, v := range scenarios.Verdicts {
		out = append(out, string(v))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
