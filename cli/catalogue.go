package cli

// catalogue.go: the commands that show what sim knows without running
// anything: sim list, sim explain, sim locks.

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// listWidth is the width sim list and sim locks fit by default: their
// last column (the fault, what a lock is) wraps under itself.
const listWidth = 100

func listCmd() *cobra.Command {
	var wide bool
	cmd := &cobra.Command{
		Use:   "list [REGEX]",
		Short: "the scenario catalogue: name, lock, expected verdict, fault",
		Long: `The scenario catalogue: name, lock, expected verdict and fault; with
REGEX, only the scenarios whose name it matches. The fault wraps to fit 100
columns; --wide prints each scenario on one line, however long.`,
		Example:           "  sim list\n  sim list redlock-\n  sim list gen-      # the generator scenarios, for sim sweep\n  sim list --wide",
		Args:              usage(cobra.MaximumNArgs(1), "usage: sim list [REGEX] [--wide]"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdList(args, wide, cmd.OutOrStdout()) },
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "one line a scenario, the fault unwrapped (wider than 100 columns)")
	return cmd
}

func cmdList(args []string, wide bool, stdout io.Writer) error {
	pattern := "."
	if len(args) == 1 {
		pattern = args[0]
	}
	list, err := scenarios.Match(pattern)
	if err != nil {
		return err
	}
	rows := [][]string{{"SCENARIO", "LOCK", "EXPECTED", "FAULT"}}
	for _, sc := range list {
		rows = append(rows, []string{sc.Name, sc.Lock, string(sc.Expected), sc.Fault})
	}
	width := listWidth
	if wide {
		width = 0
	}
	return table(stdout, width, rows)
}

// table writes rows in aligned columns, two spaces apart. With width >
// 0, the last column wraps at spaces so that no line is longer than
// width (a word longer than the room left stands alone on its line).
func table(w io.Writer, width int, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := len(rows[0])
	room := 0
	if width > 0 {
		lead := 0 // the columns before the last, each with its gap
		for c := 0; c < cols-1; c++ {
			most := 0
			for _, r := range rows {
				most = max(most, len(r[c]))
			}
			lead += most + 2
		}
		room = max(width-lead, 20) // a lead wider than width-20 overflows
	}
	blank := strings.Repeat("\t", cols-1)
	for _, r := range rows {
		lines := wrap(r[cols-1], room)
		fmt.Fprintf(tw, "%s\t%s\n", strings.Join(r[:cols-1], "\t"), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "%s%s\n", blank, l)
		}
	}
	return tw.Flush()
}

// wrap breaks s at spaces into lines of at most n bytes (n <= 0: one
// line); a word longer than n breaks after its last '_' or '-' that
// fits, or at n.
func wrap(s string, n int) []string {
	words := strings.Fields(s)
	if n <= 0 || len(words) == 0 {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, w := range words {
		for len(w) > n {
			cut := strings.LastIndexAny(w[:n], "_-") + 1
			if cut == 0 {
				cut = n
			}
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			lines = append(lines, w[:cut])
			w = w[cut:]
		}
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > n:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}

func explainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain NAME",
		Short: "what a scenario shows and its steps, without running it",
		Long: `What a scenario shows, the published passage it comes from, its
counterfactual and its steps (with what each must end in), without running
it. NAME is a catalogue name or a scenario file.`,
		Example:           "  sim explain redlock-clock-jump\n  sim explain my-scenario.yaml",
		Args:              usage(cobra.ExactArgs(1), "usage: sim explain NAME"),
		ValidArgsFunction: completeScenarios(nil),
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdExplain(args[0], cmd.OutOrStdout()) },
	}
}

func cmdExplain(name string, stdout io.Writer) error {
	sc, err := scenarios.Find(name)
	if err != nil {
		return err
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
	for _, b := range slices.Sorted(maps.Keys(sc.FixedIn)) {
		fmt.Fprintf(stdout, "\nFixed in %s %s: on that version or later (sim run %s --server-version %s=VERSION) it must end safe.\n",
			b, sc.FixedIn[b], sc.Name, b)
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
	return nil
}

// lockShape says what servers a scenario's lock runs on, how many
// clients take part and how long a lease lasts, in the lock's own terms:
// an advisory lock has no TTL (it lasts as long as its session or
// transaction), and etcd's TTL is its session lease's.
func lockShape(sc *scenarios.Scenario) string {
	spec := clients.Registered(sc.Lock) // the loader refused any other
	servers, lease := backends.Of(spec).Shape(sc.Nodes, sc.TTL.Duration)
	return fmt.Sprintf("%s, %d client(s), %s", servers, sc.Clients, lease)
}

func locksCmd() *cobra.Command {
	var mutants, wide bool
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "the lock algorithms a scenario (or --lock, --locks) can name",
		Long: `The lock algorithms a scenario's lock: field, sim run --lock and
sim matrix --locks can name, with the servers each needs (its backend).`,
		Args:              usage(cobra.NoArgs, "usage: sim locks [--mutants] [--wide]"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmdLocks(mutants, wide, cmd.OutOrStdout()) },
	}
	cmd.Flags().BoolVar(&mutants, "mutants", false, "also list the deliberately broken locks the tests use, each a mutant of one defence")
	cmd.Flags().BoolVar(&wide, "wide", false, "one line a lock, what it is unwrapped (wider than 100 columns)")
	return cmd
}

func cmdLocks(mutants, wide bool, stdout io.Writer) error {
	rows := [][]string{{"LOCK", "SERVERS", "WHAT IT IS"}}
	hidden := 0
	for _, n := range clients.Names() {
		s := clients.Registered(n)
		if s.Mutant != "" && !mutants {
			hidden++
			continue
		}
		doc := s.Doc
		if s.Mutant != "" {
			doc = "MUTANT (breaks " + s.Mutant + "): " + doc
		}
		rows = append(rows, []string{s.Name, string(s.Backend), doc})
	}
	width := listWidth
	if wide {
		width = 0
	}
	if err := table(stdout, width, rows); err != nil {
		return err
	}
	if hidden > 0 {
		fmt.Fprintf(stdout, "(%d deliberately broken locks, each a mutant of one defence, are listed by sim locks --mutants)\n", hidden)
	}
	return nil
}
