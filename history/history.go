// Package history is the event record of a run: every client operation
// (its invocation and its completion) and every fault, stamped with
// CLOCK_MONOTONIC so that events from different processes can be ordered.
// Every other part of locksim writes or reads this record.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Type says what an event is.
type Type string

const (
	// Invoke starts an operation; its completion is the next Ok, Fail or
	// Info event of the same process.
	Invoke Type = "invoke"
	// Ok completes an operation that succeeded.
	Ok Type = "ok"
	// Fail completes an operation that certainly did not take effect
	// (a lock not granted, a write the storage rejected).
	Fail Type = "fail"
	// Info completes an operation whose outcome is unknown (a timeout).
	Info Type = "info"
	// Fault records a fault being injected.
	Fault Type = "fault"
	// Heal records a fault being healed.
	Heal Type = "heal"
	// Note records a step of a scripted story, for the reader.
	Note Type = "note"
)

// Operation names used by clients.
const (
	OpAcquire = "acquire"
	OpRelease = "release"
	OpExtend  = "extend"
	// OpWrite is one read-modify-write of the protected counter: the
	// completion carries the value read and the value written.
	OpWrite = "write"
	// OpCrash marks a client process that died or was killed: every lease
	// it held is gone with it.
	OpCrash = "crash"
	// OpRenew is a watchdog's renewal, recorded as a Note of the client
	// process (it runs beside the client's operations, not as one): with
	// TTL set when the renewal succeeded (the key lives TTL from the
	// note's Time), with Reason set when it failed.
	OpRenew = "renew"
	// OpCheck is a Note of the client process: its check of its lease
	// before a write passed, and it stopped itself right there, before
	// the write went out, because the story anchored a pause on that
	// moment (scenario step field at: lease-checked).
	OpCheck = "check"
	// OpJob is a Note of a client process, added by the harness at the
	// end of a run: one row of the storage's job table, (Job, Period),
	// which the client wrote as the first effect of its run of the job
	// (a write step with a period). The checker counts them: two rows of
	// one (job, period) are the job run twice.
	OpJob = "job"
	// OpHung is a Note of a client process, added by the harness: the
	// client's operation in flight never returned within the story's
	// bound (runner.HangBound), so the harness killed the client and
	// ended the story there. Its Detail says which call and the bound.
	OpHung = "hung"
)

// Reasons a lock, the storage or the worker gives for a refusal (a Fail
// completion, or a failed renewal). A story step can assert them.
const (
	// ReasonHeld: the lock is held by another client.
	ReasonHeld = "held"
	// ReasonQuorum: fewer than a majority of the nodes granted it (Redlock).
	ReasonQuorum = "quorum"
	// ReasonValidity: a majority granted it, but the acquire took longer
	// than the validity time (Redlock's check), so it is not held.
	ReasonValidity = "validity"
	// ReasonTimeout: the lock service did not answer in time.
	ReasonTimeout = "timeout"
	// ReasonNotHeld: a release, extend or renewal found the lease gone.
	ReasonNotHeld = "not-held"
	// ReasonNoLease: the client holds no lease, so the worker refused the
	// operation without any I/O.
	ReasonNoLease = "no-lease"
	// ReasonExpired: the client checked its lease before writing and
	// found it run out, so it did not write; or an acquire that waited
	// found its own lease gone when its wait ended (etcd's Mutex.Lock).
	ReasonExpired = "expired"
	// ReasonFence: the storage refused a write whose fencing token was
	// below one it had seen.
	ReasonFence = "fence"
	// ReasonToken: the storage refused a write whose lease token no
	// longer owned the row (token-cas).
	ReasonToken = "token"
	// ReasonDuplicate: the storage refused a second run of the same
	// (job, period) (idempotent).
	ReasonDuplicate = "duplicate"
	// ReasonRollback: the transaction holding the write rolled back.
	ReasonRollback = "rollback"
	// ReasonRead: the write's read failed, so nothing was written.
	ReasonRead = "read"
)

// Reasons lists every refusal reason above, for the loader's check of a
// story step's reason: and the scenario schema.
var Reasons = []string{ReasonHeld, ReasonQuorum, ReasonValidity, ReasonTimeout, ReasonNotHeld, ReasonNoLease,
	ReasonExpired, ReasonFence, ReasonToken, ReasonDuplicate, ReasonRollback, ReasonRead}

// Event is one line of history.jsonl.
type Event struct {
	// Seq numbers events in the order the harness recorded them.
	Seq int64 `json:"seq"`
	// Time is nanoseconds of CLOCK_MONOTONIC since the run started.
	Time int64 `json:"t"`
	// Process is the client number (1-based); 0 is the harness and its faults.
	Process int `json:"process"`
	// Type is invoke, ok, fail, info, fault, heal or note.
	Type Type `json:"type"`
	// Op is the operation (acquire, release, extend, write) or fault name.
	Op string `json:"op"`
	// Key is the lock key.
	Key string `json:"key,omitempty"`
	// Token is the random value that identifies one lease.
	Token string `json:"token,omitempty"`
	// Fence is the fencing token handed out with a lease (0: none).
	Fence int64 `json:"fence,omitempty"`
	// TTL is, on an acquire or extend invocation, the lease time asked for
	// in nanoseconds. On a granted acquire or extend it is the expiry the
	// lock server applies to the lease, counted from the invocation (0:
	// the lease does not expire by time, a PostgreSQL session lock). On a
	// renew note, the TTL the renewal set.
	TTL int64 `json:"ttl,omitempty"`
	// LeaseEnd is, on a granted acquire or extend, the time (same clock as
	// Time) until which the client believes it holds the lock; 0 means the
	// client believes it holds it until it releases it (a PostgreSQL
	// session lock, or a lease a watchdog renews). A lease that measures
	// its validity by the wall clock records the monotonic instant its
	// wall-clock deadline corresponded to when it was granted. A failed
	// renew note (Reason not-held, or expired: not sent, by the client's own
	// clock) ends the client's belief.
	LeaseEnd int64 `json:"lease_end,omitempty"`
	// Nodes lists the nodes that granted the lock (Redlock).
	Nodes []string `json:"nodes,omitempty"`
	// Read is the counter value a write read.
	Read *int64 `json:"read,omitempty"`
	// Wrote is the counter value a write stored (or tried to).
	Wrote *int64 `json:"wrote,omitempty"`
	// Target is what a fault hits, in words: a node, a client, a link.
	Target string `json:"target,omitempty"`
	// Fault, on a fault event, is what the fault hit and how, as
	// structured fields (nemesis.Fault's Fields).
	Fault *FaultFields `json:"fault,omitempty"`
	// Reason is, on a Fail (or Info) completion or a failed renew note,
	// why: one of the Reason constants.
	Reason string `json:"reason,omitempty"`
	// Unlocked marks a write invoked on purpose without a lease (a story
	// about an unlocked write).
	Unlocked bool `json:"unlocked,omitempty"`
	// Detail is free text: an error, a fault's size, a step's description.
	Detail string `json:"detail,omitempty"`
	// Job and Period are, on a job note (OpJob), the job and the schedule
	// period of one row of the job table.
	Job    string `json:"job,omitempty"`
	Period string `json:"period,omitempty"`
}

// FaultFields are a fault's facts: whom it hits, how big it is, how long
// it lasts by itself, and what kind of harm it does.
type FaultFields struct {
	// Effect is the kind of harm: one of the Effect constants.
	Effect string `json:"effect"`
	// Client is the client it hits (its process or its links), or 0.
	Client int `json:"client,omitempty"`
	// Node is the server it hits, or "".
	Node string `json:"node,omitempty"`
	// Links are the nodes whose links from Client it hits.
	Links []string `json:"links,omitempty"`
	// Size is its size in time (ns): a pause's length, a clock jump, an
	// added delay.
	Size int64 `json:"size,omitempty"`
	// Rate is a clock drift's rate.
	Rate float64 `json:"rate,omitempty"`
	// Lasts is how long it lasts by itself (ns) before its target is back
	// (a timed pause, a crash's restart delay; 1 for a restart at once);
	// 0 means until it is healed.
	Lasts int64 `json:"lasts,omitempty"`
}

// Fault effects.
const (
	EffectPause   = "pause"   // a process stopped
	EffectClock   = "clock"   // a wall clock moved or running off
	EffectNetwork = "network" // a link cut, slowed, reset or closed
	EffectDown    = "down"    // a server killed (and restarted, or replaced)
)

// Completes reports whether the event completes an operation.
func (e Event) Completes() bool {
	return e.Type == Ok || e.Type == Fail || e.Type == Info
}

// Note is the event in a few words for an annotation or a timeline row:
// its Detail, or its Op when it has none.
func (e Event) Note() string {
	if e.Detail != "" {
		return e.Detail
	}
	return e.Op
}

// Int64 returns a pointer to v, for Read and Wrote.
func Int64(v int64) *int64 { return &v }

// Monotonic returns CLOCK_MONOTONIC in nanoseconds: one clock shared by
// every process on the machine, which clock faults never touch.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}

// Recorder collects the events of one run, safe for concurrent use, and
// streams them as JSON lines to an optional writer.
type Recorder struct {
	mu     sync.Mutex
	base   int64
	events []Event
	out    *bufio.Writer
	err    error
	// watch, when set, sees each event as it is recorded (Watch).
	watch func(Event)
}

// Watch has f called with each event as it is recorded, in recording
// order, from the goroutine that records it; f must return quickly (it
// holds up the recording) and must not call the Recorder. Set it before
// the first event.
func (r *Recorder) Watch(f func(Event)) {
	r.mu.Lock()
	r.watch = f
	r.mu.Unlock()
}

// NewRecorder starts a record whose time zero is base (a Monotonic reading).
// When out is not nil every event is also written to it as one JSON line.
func NewRecorder(base int64, out io.Writer) *Recorder {
	r := &Recorder{base: base}
	if out != nil {
		r.out = bufio.NewWriter(out)
	}
	return r
}

// Base is the Monotonic reading that is time zero of this record.
func (r *Recorder) Base() int64 { return r.base }

// Since converts a Monotonic reading to this record's time.
func (r *Recorder) Since(mono int64) int64 { return mono - r.base }

// Now is the current time on this record's clock.
func (r *Recorder) Now() int64 { return Monotonic() - r.base }

// Add appends an event, numbering it. A zero Time means now.
func (r *Recorder) Add(e Event) Event {
	if e.Time == 0 {
		e.Time = r.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = int64(len(r.events)) + 1
	r.events = append(r.events, e)
	if r.out != nil && r.err == nil {
		b, err := json.Marshal(e)
		if err == nil {
			b = append(b, '\n')
			_, err = r.out.Write(b)
		}
		r.err = err
	}
	if r.watch != nil {
		r.watch(e)
	}
	return e
}

// Events returns a copy of the events so far, ordered by time.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	out := append([]Event(nil), r.events...)
	r.mu.Unlock()
	Sort(out)
	return out
}

// Flush writes buffered lines and returns the first write error, if any.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out != nil && r.err == nil {
		r.err = r.out.Flush()
	}
	return r.err
}

// Sort orders events by time, then by recording order.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].Time != events[j].Time {
			return events[i].Time < events[j].Time
		}
		return events[i].Seq < events[j].Seq
	})
}

// Write writes events as JSON lines.
func Write(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Read parses JSON lines and checks them with Validate; an error names
// the line (an *InvalidError for a broken rule).
func Read(r io.Reader) ([]Event, error) {
	var events []Event
	var lines []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		events = append(events, e)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", line+1, err)
	}
	if err := validate(events, lines); err != nil {
		return nil, err
	}
	Sort(events)
	return events, nil
}

// Load reads a history.jsonl file.
func Load(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// Machine is how the machine behaved while a run's story (or a generator
// trial) played, as the timing guard measured it: what a reader of an
// unknown verdict wants to see.
type Machine struct {
	// MarginMS is how late anything could run before the timing counted
	// as untrustworthy.
	MarginMS float64 `json:"margin_ms"`
	// HarnessStallMS is the harness's worst stall past its tick, at
	// HarnessStallAt seconds on the record's clock.
	HarnessStallMS float64 `json:"harness_stall_ms"`
	HarnessStallAt float64 `json:"harness_stall_at_s"`
	// ClientStalls are the spans in which a client reported it did not
	// run (over 20ms), paused by the story or not.
	ClientStalls []ClientStall `json:"client_stalls,omitempty"`
	// CPUPressure is the share of the story's time in which some task
	// waited for a CPU (Linux's /proc/pressure/cpu); CPUPressureKnown is
	// false where the kernel does not tell.
	CPUPressure      float64 `json:"cpu_pressure"`
	CPUPressureKnown bool    `json:"cpu_pressure_known"`
	// Busy says why the timing could not be trusted (a stall past the
	// margin, or CPUs contended for too much of the story); empty when it
	// could.
	Busy string `json:"busy,omitempty"`
	// Stalled says the harness, or a client the story did not pause,
	// stalled longer than the margin: the story may not have happened as
	// timed (runner.Judge decides what that does to the verdict).
	Stalled bool `json:"stalled,omitempty"`
	// OffPlan says how a generator trial's fault struck off its plan
	// (runner.Struck.Off: where the aimed critical section was to end
	// against its lease and where it did; a fault that never struck;
	// another client's write past the margin); empty when it struck as
	// planned. Such a trial decides nothing about the planned size: no
	// verdict, safe or not.
	OffPlan string `json:"off_plan,omitempty"`
	// Missed says which overlap a scripted story told did not happen: a
	// step told to begin while another client's operation was in flight
	// began after it had ended (runner/overlap.go). A story with claims
	// is judged by its claims; one without (a counterfactual) has nothing
	// else to show its race ran.
	Missed string `json:"missed,omitempty"`
}

// ClientStall is a span in which a client did not run.
type ClientStall struct {
	Client int `json:"client"`
	// At is its start (s, on the record's clock); MS its length.
	At float64 `json:"at_s"`
	MS float64 `json:"ms"`
	// Paused says the story paused the client then: not the machine's.
	Paused bool `json:"paused,omitempty"`
}
