// Package hunt searches fault schedules against a lock for a violation
// of mutual exclusion or of the protected data, shrinks the first one it
// finds to a minimal story, and writes that story as a scenario file that
// `sim run` plays like any in the catalogue.
//
// A candidate is a Plan: the story workload (two or three clients, each
// taking the lock at its turn, doing a read-modify-write of the
// protected counter that takes its work time, and releasing), the lock's
// options a story can set (a watchdog, the lease check, replicas), and
// faults, each anchored to a protocol event of one client (it asks for
// the lock, it is granted, it has read, it has released) plus an offset.
// A fault is a kind the fault registry says how to draw (nemesis.Drawn:
// its parameter and its range relative to the TTL), or one it says how
// to place by shape (nemesis.Spec's Place and Shape: a partition that
// splits the nodes into two majorities, a dropped connection, a
// failover); the registry also says where each kind applies
// (Available). A plan is built as a scenario in Go (scenarios.Build,
// which validates it as the loader validates every story), written as
// its file (scenarios.Marshal), and played on real servers by the
// runner.
package hunt

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/nemesis"
)

// Plan is one candidate schedule.
type Plan struct {
	// Turns are the clients' turns, client 1's first.
	Turns []Turn `json:"clients"`
	// Faults strike at their anchors.
	Faults []Fault `json:"faults"`
	// Options are the lock's options the story sets.
	Options LockOptions `json:"options"`
}

// Turn is one client's part of the workload.
type Turn struct {
	// At is when it asks for the lock, in TTLs after client 1 asks.
	At float64 `json:"at_ttl"`
	// Work is how long it works between its read and its write (with no
	// storage: how long it holds the lock before releasing), in TTLs.
	Work float64 `json:"work_ttl"`
}

// EdgeMargin is how far, in TTLs, a finding's baseline is played again
// with the later clients' asks moved, each way (hunter.baselineSafe). A
// quarter of the hunts' 2 s TTL is 500 ms, the period of the coarsest
// expiry timer among the servers hunted: etcd's lessor revokes the
// leases past their TTL in a loop that waits 500 ms between rounds
// (server/lease/lessor.go, runLoop), so where a lease's end falls
// against a client's ask moves by that much from run to run and lock to
// lock.
const EdgeMargin = 0.25

// Nudged is plan p with every turn after client 1's asking d TTLs later
// (earlier when d < 0, never before client 1 asks): the faults anchored
// to those clients' events move with them.
func (p Plan) Nudged(d float64) Plan {
	q := clonePlan(p)
	for i := 1; i < len(q.Turns); i++ {
		q.Turns[i].At = max(0, round2(q.Turns[i].At+d))
	}
	return q
}

// nudgeWords says a nudge in words: "0.25 TTL later".
func nudgeWords(d float64) string {
	if d < 0 {
		return fmt.Sprintf("%g TTL earlier", -d)
	}
	return fmt.Sprintf("%g TTL later", d)
}

// LockOptions are the options of the lock a story can set.
type LockOptions struct {
	// Watchdog renews the lease in the background (watchdog: token).
	Watchdog bool `json:"watchdog,omitempty"`
	// CheckLease checks the lease just before each write (check_lease).
	CheckLease bool `json:"check_lease,omitempty"`
	// Replicas gives every Redis node an asynchronous replica (replicas),
	// which a failover promotes.
	Replicas bool `json:"replicas,omitempty"`
	// NodeTimeout, when set, is how long a client waits for each node,
	// in TTLs (node_timeout); 0: the space's, a tenth of the TTL. A long
	// one lets an acquire outlive a pause of its client.
	NodeTimeout float64 `json:"node_timeout_ttl,omitempty"`
}

// The protocol events a fault is anchored to, in the order one client
// meets them.
const (
	// Start: before anything (the anchor's client is 0).
	Start = "start"
	// Asks: the client's acquire is on its way; the fault strikes while
	// it waits for the nodes' answers.
	Asks = "asks"
	// Granted: its acquire came back, before it reads.
	Granted = "granted"
	// Read: it has read the counter and works (with no storage, as
	// Granted).
	Read = "read"
	// Released: it has released the lock.
	Released = "released"
)

// Events lists the anchor events in the order a client meets them.
var Events = []string{Asks, Granted, Read, Released}

// Anchor is the protocol event a fault strikes after.
type Anchor struct {
	// Client is whose event (0 with Start).
	Client int `json:"client,omitempty"`
	// Event is one of Start and Events.
	Event string `json:"event"`
}

func (a Anchor) String() string {
	if a.Event == Start || a.Event == "" {
		return "at the start"
	}
	what := map[string]string{Asks: "while client %d's acquire waits", Granted: "once client %d is granted",
		Read: "once client %d has read", Released: "once client %d has released"}[a.Event]
	return fmt.Sprintf(what, a.Client)
}

// since says when a fault strikes x TTLs after the anchor ("0.1 TTL after
// client 1's grant").
func (a Anchor) since(x float64) string {
	if a.Event == Start || a.Event == "" {
		return fmtTTL(x) + " after the start"
	}
	what := map[string]string{Asks: "client %d asks", Granted: "client %d's grant",
		Read: "client %d's read", Released: "client %d's release"}[a.Event]
	return fmtTTL(x) + " after " + fmt.Sprintf(what, a.Client)
}

// order is where an anchor comes among those of a plan with n clients:
// the start, then each client's events in turn.
func (a Anchor) order() int {
	if a.Event == Start || a.Event == "" {
		return 0
	}
	return 1 + (a.Client-1)*len(Events) + slices.Index(Events, a.Event)
}

// Fault is one fault of a plan: a kind, whom it aims at, its drawn value,
// when it strikes.
type Fault struct {
	// Kind is a fault kind the hunt can place (Searchable).
	Kind string `json:"kind"`
	// Client is the client it strikes (1: the first holder), for a kind
	// that strikes a client.
	Client int `json:"client,omitempty"`
	// Node is the server it strikes, for a kind that strikes a node.
	Node string `json:"node,omitempty"`
	// Links are the client's links it acts on (nodes, pg, storage), for
	// a kind that acts on links.
	Links []string `json:"links,omitempty"`
	// X is the drawn value, for a kind with a drawn parameter: a multiple
	// of the TTL for a duration (a clock jump of a client's clock steps
	// it back by it), else the number itself (a clock's rate).
	X float64 `json:"x,omitempty"`
	// At is the event it strikes after, After TTLs later.
	At    Anchor  `json:"at"`
	After float64 `json:"after_ttl,omitempty"`
}

// kind is the fault's kind, as the registry has it.
func (f Fault) kind() nemesis.Kind {
	k, _ := nemesis.LookupKind(f.Kind)
	return k
}

// drawn is the kind's drawn parameter; ok is false for a kind placed by
// shape.
func (f Fault) drawn() (nemesis.Generated, bool) {
	k := f.kind()
	if k.Generate == nil {
		return nemesis.Generated{}, false
	}
	return *k.Generate, true
}

// value is X as the kind's Build takes it: nanoseconds for a duration,
// negative for a client's clock jump.
func (f Fault) value(ttl time.Duration) float64 {
	g, _ := f.drawn()
	if g.Unit == nemesis.UnitRate {
		return f.X
	}
	v := math.Round(f.X * float64(ttl))
	if f.Client != 0 && g.OnNode {
		v = -v // a client's clock steps back: its lease seems to last longer
	}
	return v
}

// param is value as the story's step gives it: a duration to the
// millisecond when it is 10ms or longer, as a story's durations are.
func (f Fault) param(ttl time.Duration) float64 {
	v := f.value(ttl)
	if g, _ := f.drawn(); g.Unit == nemesis.UnitDuration {
		v = float64(roundDur(time.Duration(v)))
	}
	return v
}

// Describe says what the fault does and when, in words ("pause on
// client 1 (450ms; pause 1.5 TTL) once client 1 has read").
func (f Fault) Describe(ttl time.Duration) string {
	if f.After > 0 {
		return f.What(ttl) + " " + f.At.since(f.After)
	}
	return f.What(ttl) + " " + f.At.String()
}

// What says what the fault does ("pause on client 1 (450ms; pause 1.5
// TTL)").
func (f Fault) What(ttl time.Duration) string {
	if g, ok := f.drawn(); ok {
		x := fmtTTL(f.X)
		if g.Unit == nemesis.UnitRate {
			x = strconv.FormatFloat(f.X, 'g', 3, 64)
		}
		b := g.Build(f.aim(), f.value(ttl))
		detail := b.Detail()
		if len(f.Links) > 0 {
			detail = strings.Join(f.Links, ",") + ": " + detail
		}
		return fmt.Sprintf("%s on %s (%s; %s %s)", f.Kind, f.On(), detail, g.Name, x)
	}
	if len(f.Links) > 0 {
		return fmt.Sprintf("%s on %s (links %s)", f.Kind, f.On(), strings.Join(f.Links, ","))
	}
	return fmt.Sprintf("%s on %s", f.Kind, f.On())
}

// aim is what the fault is aimed at, as the registry's Params and Place
// take it.
func (f Fault) aim() nemesis.Aim { return nemesis.Aim{Client: f.Client, Node: f.Node, Links: f.Links} }

// On names what the fault strikes ("client 1", "C").
func (f Fault) On() string {
	if f.Node != "" {
		return f.Node
	}
	return fmt.Sprintf("client %d", f.Client)
}

// fmtTTL prints a multiple of the TTL ("1.05 TTL").
func fmtTTL(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) + " TTL" }
