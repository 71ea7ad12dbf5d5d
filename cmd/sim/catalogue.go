package main

// catalogue.go: the commands that show what sim knows without running
// anything: sim list, sim explain, sim locks.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"locksim/backends"
	"locksim/clients"
	"locksim/runner"
	"locksim/scenarios"
)

func listCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [REGEX]",
		Short: "the scenario catalogue, one line each: name, lock, fault, expected verdict",
		Long: `The scenario catalogue, one line each: name, lock, fault and expected
verdict; with REGEX, only the scenarios whose name it matches.`,
		Example:           "  sim list\n  sim list redlock-\n  sim list gen-      # the generator scenarios, for sim sweep",
		Args:              usage(cobra.MaximumNArgs(1), "usage: sim list [REGEX]"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              func(cmd *cobra.Command, args []string) error { return cmdList(args, cmd.OutOrStdout()) },
	}
}

func cmdList(args []string, stdout io.Writer) error {
	pattern := "."
	if len(args) == 1 {
		pattern = args[0]
	}
	list, err := scenarios.Match(pattern)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tLOCK\tFAULT\tEXPECTED")
	for _, sc := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sc.Name, sc.Lock, sc.Fault, sc.Expected)
	}
	tw.Flush()
	return nil
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
	spec, _ := clients.Lookup(sc.Lock) // the loader refuses a lock with no backend
	servers, lease := backends.Of(spec).Shape(sc.Nodes, sc.TTL.Duration)
	return fmt.Sprintf("%s, %d client(s), %s", servers, sc.Clients, lease)
}

func locksCmd() *cobra.Command {
	var mutants bool
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "the lock algorithms a scenario (or --lock, --locks) can name",
		Long: `The lock algorithms a scenario's lock: field, sim run --lock and
sim matrix --locks can name, with the servers each needs (its backend).`,
		Args:              usage(cobra.NoArgs, "usage: sim locks [--mutants]"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmdLocks(mutants, cmd.OutOrStdout()) },
	}
	cmd.Flags().BoolVar(&mutants, "mutants", false, "also list the deliberately broken locks the tests use, each a mutant of one defence")
	return cmd
}

func cmdLocks(mutants bool, stdout io.Writer) error {
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
	return nil
}
