// Package protocol is the locksim worker protocol: the versioned contract
// between the harness and a client program in any language, documented in
// docs/protocol.md and checked by docs/protocol.schema.json (generated from
// these types). It holds the lines (a client's hello, the harness's
// commands, a client's replies), the versions, the command names and the
// environment a client program is started with, and the checks of a hello
// that need no process. Starting and driving a client program is package
// worker's, as is the harness's own client, the reference implementation.
package protocol

import (
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
)

// ProtocolVersion is the newest version of the worker protocol this
// harness speaks; it speaks every version from MinProtocolVersion on, and
// each client program says in its hello which one it speaks.
const (
	ProtocolVersion    = 2
	MinProtocolVersion = 1
)

// Environment variables the harness sets for every client program, beside
// its own environment.
const (
	// EnvWorker marks a process as a client ("1"): the sim binary
	// re-executed with it runs as the harness's own worker.
	EnvWorker = "LOCKSIM_WORKER"
	// EnvProtocol is the newest protocol version the harness speaks ("2").
	EnvProtocol = "LOCKSIM_PROTOCOL"
	// EnvClient is the client's number in the story ("1", "2", ...; "0"
	// when the harness starts the program only to read its hello).
	EnvClient = "LOCKSIM_CLIENT"
)

// Values a hello may list.
var (
	// Ops are the commands a hello may list: acquire, release, extend,
	// write (v2), and loop, which the harness's own worker alone carries
	// out.
	Ops = []string{history.OpAcquire, history.OpRelease, history.OpExtend, history.OpWrite, OpLoop}
	// Fences are the fencing-token sources a hello may list (Init.Fence
	// names one).
	Fences = []string{clients.FencePostgres, clients.FenceRedisIncr, clients.FenceRedlockIncr}
	// Watchdogs are the renewals a hello may list (Init.Watchdog names
	// one).
	Watchdogs = []string{"token", "pexpire"}
)
