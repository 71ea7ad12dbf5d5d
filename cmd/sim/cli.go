package main

// cli.go: the command tree (github.com/spf13/cobra) and what every
// command shares: help, the one-line errors and their exit codes, the
// version, and the reaping of what killed runs left behind.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"locksim/backends"
	"locksim/clients"
	"locksim/env"
	"locksim/runner"
	"locksim/scenarios"
)

// Exit codes.
const (
	exitOK          = 0
	exitMismatch    = 1
	exitHarness     = 2
	exitInterrupted = 130
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

// cli is one invocation: its streams and the exit code its command set.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	code           int
}

// Main runs the CLI and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		// Whatever happens, nothing the harness started outlives it.
		if p := recover(); p != nil {
			env.Cleanup()
			panic(p)
		}
		env.Cleanup()
	}()
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	root := c.root()
	if len(args) == 0 {
		fmt.Fprint(stderr, helpText(root))
		return exitHarness
	}
	args = normalizeFlags(root, args)
	if err := checkCommand(root, args); err != nil {
		return fail(stderr, err)
	}
	// A command that only groups others (sim completion) needs one of
	// them: its help, on stderr, as for sim alone.
	if cmd, rest, err := root.Find(args); err == nil && !cmd.Runnable() && cmd != root &&
		!slices.ContainsFunc(rest, func(a string) bool { return a == "-h" || a == "--help" }) {
		fmt.Fprint(stderr, helpText(cmd))
		return exitHarness
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		// Cobra's own errors (flags, arguments) are bad input: one line.
		return fail(stderr, errors.New(strings.Join(strings.Fields(err.Error()), " ")))
	}
	return c.code
}

// root builds the command tree.
func (c *cli) root() *cobra.Command {
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:     "sim",
		Short:   "lock-safety scenarios on real servers",
		Version: version(),
		// The commands print their own one-line errors.
		SilenceErrors: true,
		SilenceUsage:  true,
		// Every start removes what killed runs left behind (sim clean),
		// except the commands that only print something.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if quietCommand(cmd) {
				return
			}
			if r, err := env.Reap(env.ReapRoots()...); !r.Empty() || err != nil {
				fmt.Fprintf(c.stderr, "sim: %s\n", reapedLine(r, err))
			}
		},
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { fmt.Fprint(cmd.OutOrStdout(), helpText(cmd)) })
	root.SetUsageFunc(func(cmd *cobra.Command) error { _, err := fmt.Fprint(cmd.OutOrStderr(), helpText(cmd)); return err })
	root.SetFlagErrorFunc(flagError)
	root.Flags().BoolP("version", "v", false, "the version and the commit it was built from")
	root.AddCommand(
		c.listCmd(), c.explainCmd(), c.runCmd(), c.matrixCmd(), c.reportCmd(), c.checkCmd(),
		c.locksCmd(), c.schemaCmd(), c.sweepCmd(), c.cleanCmd(),
		&cobra.Command{Use: "version", Short: "the version and the commit it was built from", Hidden: true,
			Args: cobra.NoArgs, Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(c.stdout, version()) }},
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
		}
	}
	return root
}

// quietCommand says whether cmd only prints something, so that a start
// of it does not reap (sim clean reaps itself, and says what it removed).
func quietCommand(cmd *cobra.Command) bool {
	for ; cmd != nil; cmd = cmd.Parent() {
		switch cmd.Name() {
		case "clean", "version", "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// checkCommand refuses an unknown command in one line, naming the closest
// ones (cobra's own message spans several lines).
func checkCommand(root *cobra.Command, args []string) error {
	if strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) {
		return nil
	}
	cmd, rest, err := root.Find(args)
	if err == nil && (cmd.Runnable() || len(operands(rest)) == 0) {
		return nil
	}
	if cmd == nil {
		cmd = root
	}
	typed := ""
	if ops := operands(rest); len(ops) > 0 {
		typed = ops[0]
	}
	what, list := fmt.Sprintf("%q", typed), "sim help lists them"
	if cmd != root {
		what, list = fmt.Sprintf("%q for %s", typed, cmd.CommandPath()), cmd.CommandPath()+" --help lists them"
	}
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(typed); len(s) > 0 {
		return fmt.Errorf("unknown command %s; did you mean %s? (%s)", what, strings.Join(s, " or "), list)
	}
	return fmt.Errorf("unknown command %s (%s)", what, list)
}

// operands are the arguments that are not flags.
func operands(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
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

// flagError words a flag's error as Go's flag package did, in one line.
func flagError(cmd *cobra.Command, err error) error {
	var (
		notDefined *pflag.NotExistError
		needsValue *pflag.ValueRequiredError
		invalid    *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &notDefined):
		typed := notDefined.GetSpecifiedName()
		if s := notDefined.GetSpecifiedShortnames(); s != "" {
			typed = s
		}
		msg := fmt.Sprintf("flag provided but not defined: -%s", typed)
		if near := nearFlags(cmd, typed); len(near) > 0 {
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
		if errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange) {
			why = "value out of range"
		}
		return fmt.Errorf("invalid value %q for flag --%s: %s", invalid.GetValue(), invalid.GetFlag().Name, why)
	}
	return err
}

// nearFlags lists cmd's flags within two edits of name, as --name.
func nearFlags(cmd *cobra.Command, name string) []string {
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if scenarios.EditDistance(name, f.Name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
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

// fail prints one line and returns the exit code for err.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "sim: %v\n", err)
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	return exitHarness
}

// do adapts a command's function, which prints its own output and errors
// and returns the exit code, to cobra.
func (c *cli) do(f func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c.code = f(cmd, args)
		return nil
	}
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
		s, _ := clients.Lookup(n)
		out = append(out, cobra.CompletionWithDesc(done+n, string(s.Backend)+": "+s.Doc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeVerdicts completes --expect.
func completeVerdicts(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return scenarios.Verdicts, cobra.ShellCompDirectiveNoFileComp
}

func (c *cli) cleanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "remove what runs killed with kill -9 left behind (temp dirs, SysV segments, containers)",
		Long: `Remove, and list, what runs killed before they could clean up left
behind: temp dirs whose owner process is gone, and their PostgreSQL's SysV
shared memory, and the docker backend's containers whose harness is gone
(when a Docker engine answers). Run directories are never touched. Every
start of sim (but help, version and completion) does the same for temp dirs
and segments; a run on the docker backend, for containers.`,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              c.do(func(_ *cobra.Command, args []string) int { return cmdClean(args, c.stdout, c.stderr) }),
	}
}

// cmdClean removes, and lists, what runs killed before they could clean
// up left behind: temp dirs whose owner process is gone, their
// PostgreSQL's SysV shared memory, and (when a Docker engine answers) the
// docker backend's containers of harnesses that are gone. Run directories
// are never touched.
func cmdClean(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "sim: usage: sim clean")
		return exitHarness
	}
	r, err := env.Reap(env.ReapRoots()...)
	for _, d := range r.Dirs {
		fmt.Fprintf(stdout, "removed %s\n", d)
	}
	for _, id := range r.Segments {
		fmt.Fprintf(stdout, "removed SysV shared memory segment %d\n", id)
	}
	fmt.Fprintln(stdout, reapedLine(r, nil))
	// The docker backend's containers, when an engine answers.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	names, cerr := env.ReapContainers(ctx)
	for _, n := range names {
		fmt.Fprintf(stdout, "removed container %s\n", n)
	}
	if len(names) > 0 {
		fmt.Fprintf(stdout, "removed %d container(s) left by runs that were killed\n", len(names))
	}
	if cerr != nil && !errors.Is(cerr, env.ErrNoDocker) {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// reapedLine says in one line what Reap removed.
func reapedLine(r env.Reaped, err error) string {
	s := "nothing left behind by earlier runs"
	if !r.Empty() {
		s = fmt.Sprintf("removed %d temp dir(s) (%.1f MB) and %d SysV segment(s) left by runs that were killed", len(r.Dirs), float64(r.Bytes)/1e6, len(r.Segments))
	}
	if err != nil {
		s += fmt.Sprintf("; could not remove everything: %v", err)
	}
	return s
}

func (c *cli) listCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [REGEX]",
		Short: "the scenario catalogue, one line each: name, lock, fault, expected verdict",
		Long: `The scenario catalogue, one line each: name, lock, fault and expected
verdict; with REGEX, only the scenarios whose name it matches.`,
		Example:           "  sim list\n  sim list redlock-\n  sim list gen-      # the generator scenarios, for sim sweep",
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              c.do(func(_ *cobra.Command, args []string) int { return cmdList(args, c.stdout, c.stderr) }),
	}
}

func cmdList(args []string, stdout, stderr io.Writer) int {
	pattern := "."
	if len(args) > 1 {
		fmt.Fprintln(stderr, "sim: usage: sim list [REGEX]")
		return exitHarness
	}
	if len(args) == 1 {
		pattern = args[0]
	}
	list, err := scenarios.Match(pattern)
	if err != nil {
		return fail(stderr, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tLOCK\tFAULT\tEXPECTED")
	for _, sc := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sc.Name, sc.Lock, sc.Fault, sc.Expected)
	}
	tw.Flush()
	return exitOK
}

func (c *cli) explainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain NAME",
		Short: "what a scenario shows and its steps, without running it",
		Long: `What a scenario shows, the published passage it comes from, its
counterfactual and its steps (with what each must end in), without running
it. NAME is a catalogue name or a scenario file.`,
		Example:           "  sim explain redlock-clock-jump\n  sim explain my-scenario.yaml",
		ValidArgsFunction: completeScenarios(nil),
		RunE:              c.do(func(_ *cobra.Command, args []string) int { return cmdExplain(args, c.stdout, c.stderr) }),
	}
}

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "sim: usage: sim explain NAME")
		return exitHarness
	}
	sc, err := scenarios.Find(args[0])
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "%s\n%s\n\n", sc.Name, sc.Title)
	fmt.Fprintf(stdout, "Lock: %s, %s. Expected verdict: %s.\n", sc.Lock, lockShape(sc), sc.Expected)
	fmt.Fprintf(stdout, "Source: %s\n\n%s\n", sc.Source, strings.TrimSpace(sc.Explain))
	if c := sc.Counterfactual; c != nil {
		fmt.Fprintf(stdout, "\nCounterfactual (sim run %s --counterfactual): %s, it must end %s.\n", sc.Name, c.Change, c.Expected)
		for _, ch := range sc.CounterfactualChanges() {
			fmt.Fprintf(stdout, "  - %s\n", ch)
		}
	}
	if len(sc.Steps) > 0 {
		fmt.Fprintf(stdout, "\nSteps:\n")
	}
	for _, st := range sc.Steps {
		line := st.Say
		if line == "" {
			line = st.Describe()
		} else if st.Do != "say" {
			line += "  [" + st.Describe() + "]"
		}
		if st.Expect != "" {
			line += "  (must end " + runner.Claim(st) + ")"
		}
		if st.Cause {
			line += "  (the cause: left out of the counterfactual)"
		}
		fmt.Fprintf(stdout, "  - %s\n", line)
	}
	return exitOK
}

// lockShape says what servers a scenario's lock runs on, how many
// clients take part and how long a lease lasts, in the lock's own terms:
// an advisory lock has no TTL (it lasts as long as its session or
// transaction), and etcd's TTL is its session lease's.
func lockShape(sc *scenarios.Scenario) string {
	spec, _ := clients.Lookup(sc.Lock) // the loader refuses a lock with no backend
	servers, lease := backends.Of(spec).Shape(sc.Nodes, sc.TTL.Duration)
	return fmt.Sprintf("%s, %d client(s), %s", servers, sc.Clients, lease)
}

func (c *cli) locksCmd() *cobra.Command {
	var mutants bool
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "the lock algorithms a scenario (or --lock, --locks) can name",
		Long: `The lock algorithms a scenario's lock: field, sim run --lock and
sim matrix --locks can name, with the servers each needs (its backend).`,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: c.do(func(_ *cobra.Command, args []string) int {
			if len(args) > 0 {
				fmt.Fprintln(c.stderr, "sim: usage: sim locks [--mutants]")
				return exitHarness
			}
			return cmdLocks(mutants, c.stdout)
		}),
	}
	cmd.Flags().BoolVar(&mutants, "mutants", false, "also list the deliberately broken locks the tests use, each a mutant of one defence")
	return cmd
}

func cmdLocks(mutants bool, stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tSERVERS\tWHAT IT IS")
	hidden := 0
	for _, n := range clients.Names() {
		s, _ := clients.Lookup(n)
		if s.Mutant != "" && !mutants {
			hidden++
			continue
		}
		doc := s.Doc
		if s.Mutant != "" {
			doc = "MUTANT (breaks " + s.Mutant + "): " + doc
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Backend, doc)
	}
	tw.Flush()
	if hidden > 0 {
		fmt.Fprintf(stdout, "(%d deliberately broken locks, each a mutant of one defence, are listed by sim locks --mutants)\n", hidden)
	}
	return exitOK
}
