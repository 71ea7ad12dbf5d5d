// setup.go builds a run's environment (the target, the servers, the proxies
// and the client processes with their clocks) and tears it all down.

package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/clockshim"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/storage"
	"github.com/locksim/locksim/worker"
)

// newTarget is an empty Target with a fresh in-process toxiproxy server.
func newTarget() *nemesis.Target {
	return &nemesis.Target{Redis: map[string]*env.Redis{}, Replicas: map[string]*env.Redis{}, Servers: map[string]nemesis.Server{},
		Network: env.NewNetwork(), Clients: map[int]*env.Proc{},
		ClientClocks: map[int]*clockshim.Control{}}
}

// setup starts the servers, the proxies and the clients.
func (r *run) setup(ctx context.Context) error {
	tmp, err := env.TempDir("locksim-run-")
	if err != nil {
		return harness("temp dir: %v", err)
	}
	r.tmp = tmp
	spec, err := clients.Lookup(r.sc.Lock)
	if err != nil {
		return harness("%v", err)
	}
	if err := r.checkClientCmd(ctx); err != nil { // external.go
		return err
	}
	plan := planServers(r.sc, spec) // servers.go
	if err := r.checkHost(ctx, plan); err != nil {
		return err
	}
	if r.o.Keep != nil {
		if err := r.o.Keep.lend(ctx, r, plan); err != nil { // kept.go
			return err
		}
	} else {
		servers, pg, err := r.startServers(ctx, plan, r.tmp, r.target.Network)
		if err != nil {
			return err
		}
		r.useServers(servers, pg)
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for c := 1; c <= r.sc.Clients; c++ {
		init, err := r.clientInit(c)
		if err != nil {
			return err
		}
		start, err := r.startOptions(init) // external.go
		if err != nil {
			return err
		}
		logf, err := r.dir.Create(fmt.Sprintf("client-%d.log", c))
		if err != nil {
			return harness("%v", err)
		}
		wg.Add(1)
		go func(c int, init protocol.Init) {
			defer wg.Done()
			defer logf.Close()
			w, err := worker.StartWith(ctx, c, r.rec, init, logf, start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			r.clients[c] = w
			r.target.Clients[c] = w.Proc()
			w.SetRecorder(r.rec, r.narrate)
		}(c, init)
	}
	wg.Wait()
	if len(errs) > 0 {
		return startError(errs) // external.go
	}
	r.sayClientProgram()
	var servers []string
	for _, s := range r.servers {
		servers = append(servers, s.Describe())
	}
	if r.storage == nil {
		servers = append(servers, "no PostgreSQL")
	}
	r.environment = fmt.Sprintf("%s, %d client process(es), %d proxies%s", strings.Join(servers, ", "), r.sc.Clients, len(r.target.Network.Links()), r.where())
	r.say("environment ready: %s", r.environment)
	return nil
}

// clientInit builds client c's links, one proxy per server it talks to,
// and the config its worker starts with.
func (r *run) clientInit(c int) (protocol.Init, error) {
	in := protocol.Init{
		Lock:          r.sc.Lock,
		Config:        clients.Config{ClientID: c, NodeTimeout: r.sc.NodeTimeout.Duration},
		StorageMode:   storage.Mode(r.sc.Storage),
		Fence:         r.sc.Fence,
		Watchdog:      r.sc.Watchdog,
		WatchdogEvery: r.sc.WatchdogEvery.Duration,
		WatchdogMax:   r.sc.WatchdogMax,
		JobOnce:       r.sc.JobOnce,
		CheckLease:    r.sc.CheckLease,
	}
	// The client's wall clock, which a clock-jump step can move.
	in.ClockFile = filepath.Join(r.tmp, fmt.Sprintf("client-%d.clock", c))
	clock, err := clockshim.NewControl(in.ClockFile)
	if err != nil {
		return in, harness("client %d's clock: %v", c, err)
	}
	r.target.ClientClocks[c] = clock
	// One proxy per server, which link faults act on; with r.direct
	// (generator.go) the client dials the server itself.
	link := func(node, addr string) (string, error) {
		l, err := r.target.Network.AddLink(env.LinkName(c, node), addr)
		if err == nil {
			r.links = append(r.links, l.Name)
		}
		if err != nil || r.direct {
			return addr, err
		}
		return l.Listen, nil
	}
	for _, s := range r.servers {
		if err := s.Connect(&in.Config, link); err != nil {
			return in, harness("%v", err)
		}
	}
	if r.storage != nil {
		// The storage's connection has a link of its own, beside the
		// lock's, so a fault can hit one and not the other.
		store, err := link(nemesis.StorageNode, r.storage.Addr())
		if err != nil {
			return in, harness("%v", err)
		}
		if r.sc.Storage != "" || r.sc.Fence == clients.FencePostgres {
			// The protected storage stands for another database: the
			// lock server's idle timeouts do not apply to it.
			in.Storage = r.storage.DSN(store) + "&idle_session_timeout=0&idle_in_transaction_session_timeout=0"
		}
	}
	return in, nil
}

// teardown heals, stops the clients, the proxies and the servers, and
// removes the temp dir. It runs on every path out of Run.
func (r *run) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.healAll(ctx); err != nil {
		r.say("warning: %v", err)
	}
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() { defer wg.Done(); c.Stop() }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.closeServers() }()
	wg.Wait()
	if r.o.Keep != nil {
		r.o.Keep.giveBack(r) // kept.go
	} else {
		r.target.Network.Close()
	}
	for _, c := range r.target.ClientClocks {
		_ = c.Close()
	}
	if r.tmp != "" {
		env.RemoveTempDir(r.tmp)
	}
}
