package runner

import (
	"context"
	"strings"
	"time"

	"locksim/env"
)

// waitReplicated waits until every replica reports its link to the
// primary up, so a story starts with replication running.
func waitReplicated(ctx context.Context, replicas map[string]*env.Redis) error {
	deadline := time.Now().Add(5 * time.Second)
	for name, rep := range replicas {
		for {
			info, err := rep.Client().Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return harness("the replica of %s did not sync within 5s: %v", name, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}
