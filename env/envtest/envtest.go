// Package envtest starts the real servers a package's tests share, from
// its TestMain, and stops them and everything else the harness started
// when the tests end.
package envtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
)

// RunWithPostgres starts one throwaway PostgreSQL cluster, stores it in
// *pg, runs the tests, then stops it and cleans up. It returns the exit
// code for os.Exit. A cluster that will not start (PostgreSQL missing
// included) fails the test binary: these tests assert against a real
// server, and passing without one would claim what was not checked.
// Under -short (go test -short, make unit) it starts nothing and leaves *pg
// nil: the tests that need the cluster skip themselves under -short.
func RunWithPostgres(m *testing.M, pg **env.Postgres) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		code := m.Run()
		env.Cleanup()
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	started := time.Now()
	p, err := env.StartPostgres(ctx, "", env.PostgresOptions{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start postgres: %v (make test installs it)\n", err)
		env.Cleanup()
		return 2
	}
	fmt.Fprintf(os.Stderr, "postgres started in %v\n", time.Since(started).Round(time.Millisecond))
	*pg = p
	code := m.Run()
	p.Stop()
	env.Cleanup()
	return code
}
