package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrationLocks plays the migration tools' own locks on real
// servers: golang-migrate's postgres driver (lock migrate, the story's)
// and goose's session locker (lock goose, judged against
// postgres-session). Through pgbouncer's transaction pooling both
// deployments of postgres-pgbouncer-migrations are granted the lock and
// migration 0042 runs twice (unsafe, two rows in the job table); with
// session pooling, its counterfactual, the second deployment is refused
// (safe). Without pgbouncer (postgres-session) each excludes as
// postgres-session does: safe.
func TestMigrationLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL and pgbouncer")
	}
	for _, lock := range []string{"migrate", "goose"} {
		t.Run(lock, func(t *testing.T) {
			dir, r, out := playWithCounterfactual(t, "postgres-pgbouncer-migrations", "--lock", lock)
			if r["lock"] != lock {
				t.Errorf("played with lock %v, want %s", r["lock"], lock)
			}
			if !strings.Contains(out, "lost update on L") {
				t.Errorf("the verdict does not name the lost update:\n%s", out)
			}
			if lock == "goose" && !strings.Contains(out, "as good as the reference postgres-session") {
				t.Errorf("goose is not judged as good as postgres-session:\n%s", out)
			}
			cf := readResult(t, filepath.Join(dir, "counterfactual"))
			if cf["verdict"] != "safe" {
				t.Errorf("session pooling: %v, want safe", cf["verdict"])
			}

			run := filepath.Join(t.TempDir(), "session")
			code, out, errb := sim(t, "run", "postgres-session", "--lock", lock, "--out", run)
			if code != exitOK {
				t.Fatalf("postgres-session --lock %s: exit %d\nstdout: %s\nstderr: %s", lock, code, out, errb)
			}
			if v := readResult(t, run)["verdict"]; v != "safe" || !strings.Contains(out, "as good as the reference postgres-session") {
				t.Errorf("postgres-session --lock %s: %v, want safe and as good as postgres-session:\n%s", lock, v, out)
			}
		})
	}
}
