// hello.go is the hello line every client program prints first, and the
// checks the harness makes of it before it sends a command.

package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/promise"
)

// Hello is the first line a client program prints on stdout, before it
// reads anything: the protocol version it speaks, the locks it implements
// and the commands it carries out; from version 2 on, what it does beyond
// acquire, release and extend.
type Hello struct {
	// Protocol is the protocol version (1 or 2).
	Protocol int `json:"protocol"`
	// Name says what the client is, for the narration and its log
	// ("node-redlock: redlock 5.0.0-beta.2, ioredis 5.11.1").
	Name string `json:"name,omitempty"`
	// Locks lists the lock algorithms (names of the catalogue: redlock,
	// redis, ...) the client implements; the story's lock must be one. A
	// lock of the program's own (Own) counts here by the catalogue lock
	// it stands in for.
	Locks []string `json:"locks"`
	// Own are the program's own locks, each written in the hello's
	// locks as an object ({"name": "my-lock", "like": "redis", "servers":
	// "redis"}) rather than a catalogue name.
	Own []OwnLock `json:"-"`
	// Ops lists the commands it carries out (acquire, release, extend,
	// and write from v2 on; loop is the harness's own worker's); every
	// command the story sends must be one.
	Ops []string `json:"ops"`
	// StorageModes (v2) lists the modes of the protected storage
	// (storage.Modes) whose read-modify-write the client makes itself.
	StorageModes []string `json:"storage_modes,omitempty"`
	// Fences (v2) lists the fencing-token sources (postgres, redis-incr,
	// redlock-incr) the client draws a granted lease's token from.
	Fences []string `json:"fences,omitempty"`
	// Watchdogs (v2) lists the renewals (token, pexpire) the client runs
	// in the background while it holds a lease, reporting each one.
	Watchdogs []string `json:"watchdogs,omitempty"`
	// CheckLease (v2) says the client checks, just before a write, that
	// its lease is still valid as its lock measures it.
	CheckLease bool `json:"check_lease,omitempty"`
	// ClientClock (v2) says a clock-jump on the client moves the wall
	// clock its lock reads: it reads it through libc, under the clock
	// shim the harness preloads, or from init's clock_file.
	ClientClock bool `json:"client_clock,omitempty"`
	// AcquireWait (v2) says an acquire whose command carries a wait waits
	// up to that long for a held lock, the way the client's library
	// waits (a blocking call, its retries), instead of trying once.
	AcquireWait bool `json:"acquire_wait,omitempty"`
	// Promises (v2, optional) are the properties the program's library
	// promises its users, each in the library's own words with the
	// address that says so (promise.Promise; a promise's locks limit it to
	// some of the program's locks). sim findings counts a story against
	// the program only where its library promises what the story tests.
	Promises promise.Set `json:"promises,omitempty"`
	// Patched (v2, optional) says, when the program plays its library as
	// no release installs it (a package patched to start at all), how:
	// sim findings then counts nothing against the library, for a
	// combination nobody runs is no finding about it.
	Patched string `json:"patched,omitempty"`
}

// OwnLock is a lock of a client program's own: its name, the catalogue
// lock it stands in for (the stories of that lock's servers are the ones
// it plays, and it is judged against that lock, played on the same
// story), and the servers it runs on, which must be that lock's.
type OwnLock struct {
	Name    string `json:"name"`
	Like    string `json:"like"`
	Servers string `json:"servers,omitempty"`
}

// UnmarshalJSON reads a hello line whose locks may mix catalogue names
// and own locks (OwnLock objects).
func (h *Hello) UnmarshalJSON(b []byte) error {
	type fields Hello
	var raw struct {
		fields
		Locks []json.RawMessage `json:"locks"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*h = Hello(raw.fields)
	h.Locks, h.Own = nil, nil
	for _, l := range raw.Locks {
		var name string
		if json.Unmarshal(l, &name) == nil {
			h.Locks = append(h.Locks, name)
			continue
		}
		var own OwnLock
		if err := json.Unmarshal(l, &own); err != nil {
			return fmt.Errorf("locks: %s is neither a catalogue name nor {\"name\", \"like\", \"servers\"}", short(l))
		}
		h.Own = append(h.Own, own)
		h.Locks = append(h.Locks, own.Like)
	}
	return nil
}

// ParseHello reads a program's first line as its hello line.
func ParseHello(line []byte) (Hello, error) {
	var h Hello
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&h); err != nil || h.Protocol == 0 {
		return Hello{}, fmt.Errorf("its first line is not a hello line ({\"protocol\":2,\"locks\":[...],\"ops\":[...]}, docs/protocol.md): %q", short(line))
	}
	return h, nil
}

// OwnName is the program's own name for the catalogue lock it stands in
// for (init's lock, the judged lock's name), "" when it implements that
// lock under the catalogue's name.
func (h Hello) OwnName(lock string) string {
	for _, o := range h.Own {
		if o.Like == lock {
			return o.Name
		}
	}
	return ""
}

// CheckVersion checks that the client speaks a version of the protocol
// this harness speaks.
func (h Hello) CheckVersion() error {
	if h.Protocol < MinProtocolVersion || h.Protocol > ProtocolVersion {
		return fmt.Errorf("speaks locksim worker protocol v%d; this harness speaks v%d to v%d (docs/protocol.md)", h.Protocol, MinProtocolVersion, ProtocolVersion)
	}
	return nil
}

// CheckOwn checks the hello's own locks: each named, standing in for a
// registered lock, on that lock's servers, and no catalogue lock claimed
// twice.
func (h Hello) CheckOwn() error {
	if len(h.Own) > 0 && h.Protocol < 2 {
		return fmt.Errorf("its hello names a lock of its own (%s), which came with protocol v2; it speaks v%d (docs/protocol.md)", h.Own[0].Name, h.Protocol)
	}
	seen := map[string]bool{}
	for _, l := range h.Locks {
		if seen[l] {
			return fmt.Errorf("its hello's locks name %s twice (a catalogue name, or an own lock's like): which one plays it?", l)
		}
		seen[l] = true
	}
	for _, o := range h.Own {
		if o.Name == "" || o.Like == "" {
			return fmt.Errorf("its hello's own lock %+v: expected a name and like, the catalogue lock it stands in for (docs/protocol.md)", o)
		}
		spec, err := clients.Lookup(o.Like)
		if err != nil {
			return fmt.Errorf("its hello's own lock %s is like %s: %v", o.Name, o.Like, err)
		}
		if o.Servers != "" && o.Servers != string(spec.Backend) {
			return fmt.Errorf("its hello's own lock %s runs on %s, but the lock it is like, %s, runs on %s: give like a lock of its servers (sim locks)", o.Name, o.Servers, o.Like, spec.Backend)
		}
	}
	return nil
}

// CheckPromises checks the hello's promises: each of a known property,
// with its quote and source, and limited only to locks the hello names.
func (h Hello) CheckPromises() error {
	for _, p := range h.Promises {
		if err := p.Check(); err != nil {
			return fmt.Errorf("its hello's promises: %v (docs/protocol.md)", err)
		}
		for _, l := range p.Locks {
			if !slices.Contains(h.Locks, l) {
				return fmt.Errorf("its hello's promise %s is limited to lock %s, which its hello does not name (%v)", p.Property, l, h.Locks)
			}
		}
	}
	return nil
}

// Covers checks that the client implements lock and carries out every
// command in ops.
func (h Hello) Covers(lock string, ops []string) error {
	if lock != "" && !slices.Contains(h.Locks, lock) {
		return fmt.Errorf("implements the locks %v (its hello); the story needs lock %s", h.Locks, lock)
	}
	for _, op := range ops {
		if !slices.Contains(h.Ops, op) {
			return fmt.Errorf("carries out %v (its hello); the story needs %q too", h.Ops, op)
		}
	}
	return nil
}

// short is a line cut to a length an error message can carry.
func short(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
