package main

// schema.go: sim schema, which prints the scenario file's JSON Schema.

import (
	"fmt"

	"github.com/spf13/cobra"

	"locksim/scenarios"
)

func (c *cli) schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "the scenario file's JSON Schema, for editors and validators",
		Long: `Print the JSON Schema of a scenario file, generated from the Go types
and their doc comments (docs/scenarios.md is the same reference as a table).
Every catalogue file names it on its first line,
  # yaml-language-server: $schema=schema.json
so that an editor with a YAML language server completes and checks the
fields; for your own file, save the schema beside it:
  sim schema > schema.json`,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: c.do(func(_ *cobra.Command, args []string) int {
			if len(args) > 0 {
				fmt.Fprintln(c.stderr, "sim: usage: sim schema")
				return exitHarness
			}
			c.stdout.Write(scenarios.SchemaJSON)
			return exitOK
		}),
	}
}
