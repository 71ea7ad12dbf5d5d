package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/storage"
)

// setup builds the lock client, its fencing-token source and the handle on
// the protected storage, and opens their connections.
func (s *state) setup(ctx context.Context, spec clients.Spec, in protocol.Init) error {
	s.init = in
	s.wall = time.Now
	if in.ClockFile != "" {
		clock, err := clockshim.OpenControl(in.ClockFile)
		if err != nil {
			return err
		}
		// A drift runs the client's monotonic clock too: its locks time
		// their leases by it, as a process under the shim would.
		s.wall, s.realMono = clock.Now, clock.RealMonotonic
		clients.UseMonotonic(clock.Monotonic)
	}
	in.Config.WallClock = s.wall
	lock, err := spec.New(in.Config)
	if err != nil {
		return err
	}
	if in.Storage != "" {
		if s.store, err = storage.Open(ctx, in.Storage, in.StorageMode); err != nil {
			return err
		}
		s.store.JobOnce = in.JobOnce
	}
	redisNodes := in.Config.Servers[clients.RedisBackend] // what a Redis fence counts on
	switch in.Fence {
	case "":
	case clients.FencePostgres:
		if in.Storage == "" {
			return errors.New("fence postgres needs the storage connection")
		}
		src, err := clients.NewPGSequence(in.Storage)
		if err != nil {
			return err
		}
		lock = clients.Fenced(lock, src)
	case clients.FenceRedisIncr:
		if len(redisNodes) == 0 {
			return errors.New("fence redis-incr needs a Redis node")
		}
		lock = clients.Fenced(lock, clients.NewRedisIncr(redisNodes[0].Addr, clients.DefaultFenceKey, in.Config.Timeout()))
	case clients.FenceRedlockIncr:
		if len(redisNodes) == 0 {
			return errors.New("fence redlock-incr needs Redis nodes")
		}
		lock = clients.Fenced(lock, clients.NewRedlockIncr(redisNodes, clients.DefaultFenceKey, in.Config.Timeout()))
	default:
		return fmt.Errorf("unknown fence source %q", in.Fence)
	}
	s.lock = lock
	if w, ok := lock.(clients.Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

// write is one critical section on the protected counter: read it, (for
// a scheduled job's run, c.Period, write its row to the job table,) work
// for c.Work, write read+1 with this lease's fence and token. A pause
// (SIGSTOP) during the work is Kleppmann's GC pause. A client without a
// lease does not write (no I/O) unless the command says Unlocked.
func (s *state) write(ctx context.Context, c protocol.Command) {
	l, held := s.lease(c.Key)
	invoke := history.Event{Time: history.Monotonic(), Type: history.Invoke, Op: history.OpWrite, Key: c.Key,
		Token: l.Token, Fence: l.Fence, Unlocked: c.Unlocked}
	done := history.Event{Op: history.OpWrite, Key: c.Key, Token: l.Token, Fence: l.Fence}
	if !held && !c.Unlocked {
		s.event(c.ID, invoke)
		s.noLease(c.ID, history.OpWrite, c.Key)
		return
	}
	if s.store == nil {
		s.event(c.ID, invoke)
		done.Type, done.Detail = history.Fail, "this scenario has no protected storage"
		s.event(c.ID, done)
		return
	}
	store := s.store
	tx, inTx := s.lock.(clients.TxHolder)
	if inTx && tx.Tx() != nil {
		store = store.WithTx(tx.Tx())
	} else {
		inTx = false
	}
	// The invocation is stamped before the read and sent after it: the
	// harness aims a pause at the work between read and write when the
	// invocation arrives, and then the read has surely been made.
	read, err := s.read(ctx, store, l)
	var jobErr error
	if err == nil && c.Period != "" {
		// The job's row goes in before the invocation is sent too, so a
		// story that kills the client once its write has begun finds
		// the row there.
		jobErr = store.RecordJob(ctx, c.Period, s.init.Config.ClientID)
	}
	s.event(c.ID, invoke)
	if err != nil {
		// Nothing was written: the counter is untouched.
		done.Type, done.Reason, done.Detail = history.Fail, history.ReasonRead, err.Error()
		s.event(c.ID, done)
		return
	}
	if jobErr != nil {
		// The row may or may not be there: the run's outcome is unknown.
		done.Type, done.Detail = history.Info, jobErr.Error()
		s.event(c.ID, done)
		return
	}
	// A fault aimed at this critical section strikes here (OpHold).
	s.held()
	s.sleep(c.Work)
	done.Read, done.Wrote = history.Int64(read), history.Int64(read+1)
	if !s.cleared(c, l) {
		done.Type, done.Reason, done.Detail = history.Fail, history.ReasonExpired, "not written: by the client's check, the lease had run out, its renewal had found it gone, or its lock's connection no longer vouched for it (a suspended session)"
		s.event(c.ID, done)
		return
	}
	accepted, err := store.Write(ctx, read, read+1, l.Fence, l.Token)
	switch {
	case err != nil:
		done.Type, done.Detail = history.Info, err.Error()
	case !accepted:
		done.Type, done.Reason, done.Detail = history.Fail, refusalReason(store.Mode()), fmt.Sprintf("storage (%s) refused the write", store.Mode())
	default:
		done.Type = history.Ok
	}
	if inTx && done.Type == history.Ok {
		// Not done until the transaction commits, at release.
		s.commits[c.Key] = done
		return
	}
	s.event(c.ID, done)
}

// cleared is the careful client's last step before its write: with
// check_lease, the check that the lease still holds (false: do not
// write). When the check passes and the command asks it
// (Command.StopAfterCheck), it then tells the harness so and stops this
// process with SIGSTOP before the write goes out: the moment a story's
// anchored pause strikes. The note is flushed before the stop (send
// flushes a check note at once), and kill to one's own process stops it
// before kill returns, so nothing is written until the harness sends
// SIGCONT.
func (s *state) cleared(c protocol.Command, l clients.Lease) bool {
	if !s.init.CheckLease {
		return true
	}
	if !s.stillHeld(l) {
		return false
	}
	if c.StopAfterCheck {
		s.event(c.ID, history.Event{Type: history.Note, Op: history.OpCheck, Key: l.Key, Token: l.Token,
			Detail: "lease check passed; the client stops here, before its write"})
		_ = stopSelf()
	}
	return true
}

// stopSelf stops this process (SIGSTOP); a variable, so tests can see it
// called without stopping the test binary.
var stopSelf = func() error { return syscall.Kill(os.Getpid(), syscall.SIGSTOP) }

// sleep works for d as the client's monotonic clock counts it: d/rate of
// real time under a clock-drift, as a program's sleep under the clock shim
// lasts (its other timers, a watchdog's period, run at real speed).
func (s *state) sleep(d time.Duration) {
	end := clients.Monotonic() + int64(d)
	for {
		left := s.real(end) - history.Monotonic()
		if left <= 0 {
			return
		}
		time.Sleep(time.Duration(left))
	}
}

// stillHeld is the careful client's check before writing: the lease is
// still the one held (a watchdog has not found it gone) and still valid
// as the lock measures it, by the wall clock or the monotonic clock.
func (s *state) stillHeld(l clients.Lease) bool {
	cur, ok := s.lease(l.Key)
	return ok && cur.Token == l.Token && cur.StillValid(s.wall)
}

// refusalReason is why storage in mode m refuses a write.
func refusalReason(m storage.Mode) string {
	switch m {
	case storage.Fenced, storage.FencedWrite:
		return history.ReasonFence
	case storage.TokenCAS:
		return history.ReasonToken
	case storage.Idempotent:
		return history.ReasonDuplicate
	}
	return ""
}

// read opens a critical section on the storage: claim it for the lease's
// token (token-cas) and read the counter (raising the fence, if fenced).
func (s *state) read(ctx context.Context, store *storage.Store, l clients.Lease) (int64, error) {
	if err := store.Claim(ctx, l.Token); err != nil {
		return 0, err
	}
	return store.ReadFenced(ctx, l.Fence)
}

// settleCommit records the outcome of a write made inside a postgres-xact
// transaction once its commit (the release) has answered.
func (s *state) settleCommit(id int64, key string, releaseErr error) {
	done, ok := s.commits[key]
	if !ok {
		return
	}
	delete(s.commits, key)
	switch {
	case releaseErr == nil:
	case errors.Is(releaseErr, pgx.ErrTxCommitRollback):
		done.Type, done.Reason, done.Detail = history.Fail, history.ReasonRollback, "the transaction rolled back at commit"
	default:
		done.Type, done.Detail = history.Info, "commit: "+releaseErr.Error()
	}
	done.Time = 0
	s.event(id, done)
}
