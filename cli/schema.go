package cli

// schema.go: sim schema, which prints the scenario file's JSON Schema.

import (
	"github.com/spf13/cobra"

	"github.com/locksim/locksim/scenarios"
)

func schemaCmd() *cobra.Command {
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
		Args:              usage(cobra.NoArgs, "usage: sim schema"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(scenarios.SchemaJSON)
			return err
		},
	}
}
