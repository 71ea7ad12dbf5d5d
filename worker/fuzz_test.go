package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/protocol"
)

const (
	// fuzzMaxInput and fuzzMaxLines bound one fuzz input.
	fuzzMaxInput = 64 << 10
	fuzzMaxLines = 100
	// fuzzHang is how long Serve may take on one input before the target
	// calls it a hang: with no init every command is refused at once.
	fuzzHang = 10 * time.Second
)

// fuzzCommands seed FuzzServe: valid commands, each refused before init,
// and garbage.
var fuzzCommands = []string{
	`{"id":1,"op":"acquire","key":"L","ttl":1000000000}`,
	`{"id":2,"op":"release","key":"L"}`,
	`{"id":3,"op":"write","key":"L","work":2000000}`,
	`{"id":4,"op":"write","key":"L","unlocked":true}`,
	`{"id":5,"op":"extend","key":"L","ttl":1000000000}`,
	`{"id":6,"op":"loop","key":"L","ttl":1000000000,"loop":{"duration":1000000000,"max_cycles":3,"work":2000000,"work_dist":"exponential","backoff":1000000,"seed":7}}`,
	`{"id":7,"op":"fly"}` + "\n" + `{"id":8}` + "\n" + `{}`,
	`{"id":9,"op":"acquire"}` + "\n\n" + `{"id":10,"op":"release"}` + "\r\n",
	`{"id":"x","op":"acquire"}`,
	`{"id":11,"op":"acquire","ttl":"1s"}`,
	`{"id":12,"op":"acquire","loop":[1]}`,
	`{"id":1e400}`,
	`[1,2,3]`,
	`null`,
	`{"id":13,"op":"acquire"} trailing`,
	"not json at all\n\x00\xff",
	`{"op":"ini` + "\n" + `t"}`,
}

// FuzzServe: the worker's command loop never panics or hangs on any input,
// answers each line with exactly one Done reply (after any events), writes
// only lines that decode as a protocol.Reply, and refuses a line that is
// no valid command with an error.
//
// No input reaches a lock or a server: fuzzInput drops every line that
// decodes, as Serve decodes it, to an init command (the only command that
// builds a lock client and opens storage; a fuzzed init could name a real
// lock and dial the address in its config). Without init, Serve refuses
// every other command ("before init"), so what is fuzzed is the protocol
// decoder and the reply path, never a connection.
func FuzzServe(f *testing.F) {
	for _, c := range fuzzCommands {
		f.Add([]byte(c + "\n"))
	}
	f.Add([]byte(strings.Join(fuzzCommands, "\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := fuzzInput(data)
		if lines == nil {
			return
		}
		var in bytes.Buffer
		for _, l := range lines {
			in.WriteString(l + "\n")
		}
		out := &lockedBuffer{}
		done := make(chan int, 1)
		go func() { done <- Serve(&in, out) }()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("Serve returned %d", code)
			}
		case <-time.After(fuzzHang):
			t.Fatalf("Serve still running after %v", fuzzHang)
		}
		checkReplies(t, lines, out.snapshot())
	})
}

// lockedBuffer is Serve's output: a reply the worker sends on its own,
// from another goroutine, may still be written as Serve returns.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) snapshot() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// fuzzInput splits data into lines as Serve's scanner does and drops the
// lines Serve would take as an init command; nil when data is too big.
func fuzzInput(data []byte) []string {
	if len(data) > fuzzMaxInput {
		return nil
	}
	lines := []string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() && len(lines) < fuzzMaxLines {
		var c protocol.Command
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Op == "init" {
			continue
		}
		lines = append(lines, sc.Text())
	}
	return lines
}

// checkReplies checks Serve's output for the input lines, none an init.
func checkReplies(t *testing.T, lines []string, out []byte) {
	t.Helper()
	var replies []protocol.Reply
	for i, l := range bytes.SplitAfter(out, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		if l[len(l)-1] != '\n' {
			t.Fatalf("reply %d is not a whole line: %q", i, l)
		}
		var r protocol.Reply
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil || dec.More() {
			t.Fatalf("reply %d is not one Reply: %v: %q", i, err, l)
		}
		if !r.Done && r.Event == nil && r.Error == "" {
			continue // sent on its own (a stall report), not an answer to a line
		}
		replies = append(replies, r)
	}
	if len(replies) != len(lines) {
		t.Fatalf("%d replies to %d lines:\n%s", len(replies), len(lines), out)
	}
	for i, l := range lines {
		r := replies[i]
		if !r.Done || r.Error == "" || r.Event != nil {
			t.Fatalf("line %d %q: reply %+v, want done with an error and no event (no init)", i+1, l, r)
		}
		var c protocol.Command
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			if r.ID != 0 || !strings.HasPrefix(r.Error, "bad command: ") {
				t.Fatalf("line %d %q is no command: reply %+v, want a bad command error", i+1, l, r)
			}
			continue
		}
		if r.ID != c.ID || !strings.Contains(r.Error, "before init") {
			t.Fatalf("line %d %q: reply %+v, want id %d refused before init", i+1, l, r, c.ID)
		}
	}
}
