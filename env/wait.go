package env

import (
	"context"
	"fmt"
	"time"
)

// waitAnswers asks a starting server, every 2 ms, until ask succeeds, the
// process p exits, ctx ends or d passes (or ctx's deadline, if sooner).
// name is the server's program and answer what a success is, for the
// errors ("redis-server", "PONG").
func waitAnswers(ctx context.Context, p process, d time.Duration, name, answer string, ask func() error) error {
	deadline := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	var last error
	for {
		if p.Exited() {
			return fmt.Errorf("%s exited during start-up: %v", name, p.Err())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %v (last: %v)", answer, d, last)
		}
		if last = ask(); last == nil {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}
