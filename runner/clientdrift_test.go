package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/worker"
)

// TestClockDriftOnAClientLease: a Go worker whose client clock drifts
// times its own Redlock lease by the drifting CLOCK_MONOTONIC, as a
// process on a slow or fast machine would. Granted a 1 s lease (validity
// 988 ms) on a real Redis, it believes it for about 1.976 s of real time
// at rate 0.5 and 494 ms at rate 2, where a client at real speed believes
// it for 988 ms; the server's key lives 1 s whatever the client's clock.
func TestClockDriftOnAClientLease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := env.StartRedis(ctx, env.RedisOptions{Name: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for _, rate := range []float64{1, 0.5, 2} {
		dir := t.TempDir()
		clock, err := clockshim.NewControl(filepath.Join(dir, "client-1.clock"))
		if err != nil {
			t.Fatal(err)
		}
		in := protocol.Init{Lock: "redlock", ClockFile: clock.Path()}
		in.Config.AddServer(clients.RedisBackend, clients.Node{Name: "A", Addr: r.Addr})
		logf, err := os.Create(filepath.Join(dir, "client.log"))
		if err != nil {
			t.Fatal(err)
		}
		rec := history.NewRecorder(history.Monotonic(), nil)
		c, err := worker.StartWith(ctx, 1, rec, in, logf, worker.StartOptions{Ops: []string{history.OpAcquire}})
		if err != nil {
			t.Fatal(err)
		}
		clock.SetRate(rate)
		key := "drift-" + time.Now().Format("150405.000000")
		if err := c.Do(ctx, protocol.Command{Op: history.OpAcquire, Key: key, TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		var granted *history.Event
		for _, e := range rec.Events() {
			if e.Op == history.OpAcquire && e.Type == history.Ok {
				granted = &e
			}
		}
		if granted == nil {
			t.Fatalf("rate %g: the acquire was not granted: %+v", rate, rec.Events())
		}
		believed := time.Duration(granted.LeaseEnd - granted.Time)
		want := time.Duration(float64(time.Second-clients.Drift(time.Second)) / rate)
		if believed < want-60*time.Millisecond || believed > want+20*time.Millisecond {
			t.Errorf("rate %g: the client believes its 1s lease for %v of real time, want about %v", rate, believed, want)
		}
		if pttl, err := r.Client().PTTL(ctx, key).Result(); err != nil || pttl < 900*time.Millisecond || pttl > time.Second {
			t.Errorf("rate %g: the key's PTTL on the server is %v (%v), want about 1s", rate, pttl, err)
		}
		c.Stop()
		logf.Close()
		clock.Close()
	}
}
