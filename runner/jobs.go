package runner

import (
	"context"
	"fmt"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/storage"
)

// recordJobs reads the storage's job table once the story's operations
// have all completed, and adds each row to the history as a job note of
// the client that wrote it (history.OpJob), for the checker to count: a
// story whose writes run a scheduled job (a step with a period). Rows
// written by a client killed mid-run are there too; that is the point.
func (r *run) recordJobs(ctx context.Context) error {
	if !r.sc.RunsJobs() {
		return nil
	}
	rows, err := storage.Jobs(ctx, r.storage.DSN(r.storage.Addr()))
	if err != nil {
		return harness("reading the job table: %v", err)
	}
	for _, j := range rows {
		r.rec.Add(history.Event{Type: history.Note, Process: j.Client, Op: history.OpJob, Job: j.Job, Period: j.Period,
			Detail: fmt.Sprintf("a row of the job table: client %d ran job %s for period %s", j.Client, j.Job, j.Period)})
	}
	return nil
}
