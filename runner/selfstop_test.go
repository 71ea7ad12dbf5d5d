package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/worker"
)

// TestAwaitSelfStop: a pause anchored at a client's lease check strikes
// only once the client has stopped itself, not when its note arrives. A
// client that reports and then stops late (as a worker descheduled
// between the two does) is waited for; one that never stops is a
// harness failure, never a pause struck at the wrong moment.
func TestAwaitSelfStop(t *testing.T) {
	const hello = `echo '{"protocol":2,"name":"sh","locks":["x"],"ops":["acquire","write"],"storage_modes":["plain"]}'; read l; echo '{"id":1,"done":true}'; `
	start := func(t *testing.T, script string) *worker.Client {
		logf, err := os.Create(filepath.Join(t.TempDir(), "client.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logf.Close() })
		rec := history.NewRecorder(history.Monotonic(), nil)
		cl, err := worker.StartWith(context.Background(), 1, rec, protocol.Init{Lock: "x"}, logf, worker.StartOptions{Argv: []string{"sh", "-c", hello + script}, Ops: []string{"write"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Stop)
		return cl
	}

	late := start(t, `sleep 0.3; kill -STOP $$; cat >/dev/null`)
	r := &run{clients: map[int]*worker.Client{1: late}}
	if late.Stopped() {
		t.Fatal("the client is stopped before it stopped itself")
	}
	begin := time.Now()
	if err := r.awaitSelfStop(context.Background(), 1, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d < 250*time.Millisecond {
		t.Fatalf("went on after %v, before the client stopped itself at 300ms", d)
	}
	if !late.Stopped() {
		t.Fatal("awaitSelfStop returned with the client running")
	}
	_ = late.Proc().Signal(syscall.SIGCONT)

	never := start(t, `cat >/dev/null`)
	r = &run{clients: map[int]*worker.Client{1: never}}
	err := r.awaitSelfStop(context.Background(), 1, time.Now().Add(200*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "did not stop itself") {
		t.Fatalf("error %v, want the client that did not stop itself named", err)
	}
}
