package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// TestReferenceReadsAReplyThatArrived: locksim's memcached lock, stopped
// (SIGSTOP) for 1s while its add is in flight, far past its 200ms
// request timeout, wakes with the server's answer in its socket: the
// acquire ends granted, as the server decided, never "did not answer"
// (clients/arrived.go). The hunts judged tooz's memcached lock against
// a reference whose deadline fired there. Played on a real memcached.
func TestReferenceReadsAReplyThatArrived(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts memcached")
	}
	sc, err := scenarios.Parse("stopped-during-acquire.yaml", []byte(`name: stopped-during-acquire
lock: memcached
ttl: 2s
expected: safe
steps:
  - do: latency
    client: 1
    links: [A]
    delay: 100ms
  - do: acquire
    client: 1
    async: true
  - do: sleep
    for: 40ms
  - do: pause
    client: 1
    for: 1s
  - do: wait
    client: 1
  - do: heal
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), sc, Options{Out: filepath.Join(t.TempDir(), sc.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var done *history.Event
	for i, e := range out.Events {
		if e.Process == 1 && e.Op == history.OpAcquire && e.Type != history.Invoke {
			done = &out.Events[i]
		}
	}
	if done == nil || done.Type != history.Ok {
		t.Fatalf("client 1's acquire ended %+v; want granted: memcached answered while the client was stopped", done)
	}
}
