// Command sim is locksim's command line; the whole of it is package cli,
// so that a team's own main can register its lock and run the same
// commands (docs/plugins.md).
package main

import (
	"os"

	"github.com/locksim/locksim/cli"
)

func main() { os.Exit(cli.Main()) }
