// reply.go is a line from a client to the harness.

package protocol

import "github.com/locksim/locksim/history"

// Reply is one line from a worker to the harness.
type Reply struct {
	// ID is the command this reply belongs to.
	ID int64 `json:"id"`
	// Event is a history event whose Time is an absolute CLOCK_MONOTONIC
	// reading; the harness rebases it and sets Process.
	Event *history.Event `json:"event,omitempty"`
	// Done says the command is finished.
	Done bool `json:"done,omitempty"`
	// Error is set when the command could not be carried out at all (bad
	// command, init failure): a harness error, not an operation outcome.
	Error string `json:"error,omitempty"`
	// Stall, sent on its own, says the worker did not run for a while
	// (CLOCK_MONOTONIC readings): the machine was too busy, or the worker
	// was paused (SIGSTOP) on purpose, which the harness tells apart.
	Stall *Stall `json:"stall,omitempty"`
}

// Stall is a span in which the worker did not run.
type Stall struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}
