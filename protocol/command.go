// command.go is a line from the harness to a client: the command, init's
// configuration, and the generator loop the harness's own worker runs.

package protocol

import (
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/storage"
)

// Command is one line from the harness to a worker.
type Command struct {
	// ID ties replies to the command.
	ID int64 `json:"id"`
	// Op is init, acquire, release, extend or write (v2); the harness
	// sends loop, stop-loop, hold and resume (worker/loop.go) to its own
	// worker only.
	Op string `json:"op"`
	// Key is the lock key.
	Key string `json:"key,omitempty"`
	// TTL is the lease time asked for by acquire and extend.
	TTL time.Duration `json:"ttl,omitempty"`
	// Wait lets an acquire wait up to this long for a held lock, as its
	// lock waits (clients.Waiter), instead of trying once (v2).
	Wait time.Duration `json:"wait,omitempty"`
	// Work is how long a write works between its read and its write.
	Work time.Duration `json:"work,omitempty"`
	// Unlocked lets a write go ahead without a lease (a story about an
	// unlocked write); otherwise a write, extend or release without a
	// lease is refused with no I/O.
	Unlocked bool `json:"unlocked,omitempty"`
	// StopAfterCheck makes a write stop its own process (SIGSTOP) right
	// after its lease check has passed, and before it writes, once it has
	// sent a check note (history.OpCheck): the story anchored a pause on
	// that moment, and the harness resumes the process (a write only, with
	// Init.CheckLease; the harness sends it to its own worker only).
	StopAfterCheck bool `json:"stop_after_check,omitempty"`
	// Period makes a write one run of a scheduled job for this period:
	// right after its read, before its work, it writes the row (job,
	// period) to the storage's job table (storage.RecordJob), the run's
	// first effect, which the checker counts (the harness sends it to its
	// own worker only).
	Period string `json:"period,omitempty"`
	// Init configures the worker (op init only).
	Init *Init `json:"init,omitempty"`
	// Loop configures a generator loop (op loop only, sent to the
	// harness's own worker only; see worker/loop.go).
	Loop *Loop `json:"loop,omitempty"`
}

// Init is what a worker needs to build its lock client and reach storage.
type Init struct {
	// Lock names a registered lock algorithm.
	Lock string `json:"lock"`
	// Config is the lock's connection config, as this client reaches it.
	Config clients.Config `json:"config"`
	// Storage is the protected resource's connection string ("": none).
	Storage string `json:"storage,omitempty"`
	// StorageMode is one of storage.Modes: plain, fenced, fenced-write,
	// token-cas or idempotent.
	StorageMode storage.Mode `json:"storage_mode,omitempty"`
	// Fence names the fencing-token source: "" (none), or one of
	// clients.FencePostgres (a sequence, through Storage), FenceRedisIncr
	// or FenceRedlockIncr (INCR on the Redis nodes).
	Fence string `json:"fence,omitempty"`
	// Watchdog renews every lease in the background: "" (no), "token"
	// (only while the key holds this lease's token) or "pexpire" (plain
	// PEXPIRE on the key, whoever holds it).
	Watchdog string `json:"watchdog,omitempty"`
	// WatchdogEvery is how often the watchdog renews.
	WatchdogEvery time.Duration `json:"watchdog_every,omitempty"`
	// WatchdogMax bounds the watchdog to that many renewals of a lease
	// (0: none). Sent to the harness's own worker only.
	WatchdogMax int `json:"watchdog_max,omitempty"`
	// ClockFile is the control file of this client's wall clock (see
	// nemesis/clockshim), so a fault can jump it. Empty: the real clock.
	ClockFile string `json:"clock_file,omitempty"`
	// CheckLease makes a write check, just before writing, that the lease
	// is still valid as the lock measures it, and not write if it is not.
	CheckLease bool `json:"check_lease,omitempty"`
	// JobOnce makes a scheduled job's first effect idempotent: its row is
	// written only by the first run of its period (storage.SQLJobOnce).
	// Sent to the harness's own worker only.
	JobOnce bool `json:"job_once,omitempty"`
}

// OpLoop is the command that runs a generator loop (Command.Loop);
// OpStopLoop ends the running one after its current cycle, before its
// Duration: the harness stops the loops once the trial's faults have run
// their course, so that a loop timed for a fault that could strike late
// does not run on idle when it struck early. OpHold stops the loop's next
// write after its read, before its work, and is done once it has; OpResume
// lets that write go on (or takes back a hold not reached yet): the
// harness strikes a fault while the write is held, so the fault always
// lands inside the critical section.
const (
	OpLoop     = "loop"
	OpStopLoop = "stop-loop"
	OpHold     = "hold"
	OpResume   = "resume"
)

// Loop configures one generator loop.
type Loop struct {
	// Duration bounds the loop: no cycle starts after it has passed (a
	// cycle under way when it passes, a paused one included, finishes).
	Duration time.Duration `json:"duration"`
	// MaxCycles stops the loop after that many critical sections (0: no
	// limit).
	MaxCycles int `json:"max_cycles,omitempty"`
	// Work is the mean work time inside the critical section.
	Work time.Duration `json:"work,omitempty"`
	// WorkDist is uniform (Work/2 to 3*Work/2), exponential (mean Work) or
	// fixed.
	WorkDist string `json:"work_dist,omitempty"`
	// Backoff bounds the wait after a refused acquire (drawn uniformly
	// from 0 to Backoff), so contending clients do not spin in step.
	Backoff time.Duration `json:"backoff,omitempty"`
	// Seed seeds the work and backoff draws.
	Seed uint64 `json:"seed"`
	// Prompt sends each write's events at once, for a harness that aims
	// a fault at this client's critical sections; without it they are
	// buffered as the rest (the Go worker's state.send).
	Prompt bool `json:"prompt,omitempty"`
}
