package runner

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// benchLoop is how long each side of BenchmarkGeneratorThroughput loops.
const benchLoop = time.Second

// benchBackoff is the wait after a refused acquire, drawn from 0 to it, on
// both sides.
const benchBackoff = 100 * time.Microsecond

// BenchmarkGeneratorThroughput compares, in the same run and on the same
// servers, generator mode (4 worker processes looping on single Redis, lock
// and storage links through their toxiproxy proxies, every operation
// recorded as history events and streamed to the harness) with the loopback
// floor: 4 goroutines in this process, each with its own go-redis client
// and pgx connection straight to the servers, looping the same commands and
// recording nothing:
//
//	SET L <random token> NX PX 1000   (refused: sleep 0..100us, again)
//	SELECT value FROM counter WHERE id = 1
//	UPDATE counter SET value = $1 WHERE id = 1
//	EVALSHA <if GET L == token then DEL L>
//
// Work time is 0 on both sides. A cycle is one granted acquire with its
// write and release. It reports the medians of cycles/s for each side and
// their ratio (target: generator >= 80% of the floor; docs/benchmarks.md).
func BenchmarkGeneratorThroughput(b *testing.B) {
	sc := &scenarios.Scenario{Name: "bench-generator", Conditions: scenarios.Conditions{Lock: "redis", Nodes: 1, Clients: 4, Key: "L", Storage: "plain"},
		Generator: &scenarios.Generator{Fault: "none", WorkDist: "fixed"}}
	sc.TTL.Duration = time.Second
	sc.NodeTimeout.Duration = 200 * time.Millisecond
	sc.Generator.Duration.Duration = benchLoop
	sc.Generator.Backoff.Duration = benchBackoff
	ctx := context.Background()
	t, err := OpenTrials(ctx, sc, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	redisAddr, pgDSN := t.r.target.Redis["A"].Addr, t.r.storage.DSN(t.r.storage.Addr())
	var gen, floor, genOps, floorOps []float64
	for i := 0; b.Loop(); i++ {
		tr, err := t.Play(ctx, *sc.Generator, sc.TTL.Duration, TrialSeed(1, 0, i))
		if err != nil {
			b.Fatal(err)
		}
		cycles, ops := 0, 0
		for _, e := range tr.Events {
			if e.Type == history.Invoke {
				ops++
			}
			if e.Op == history.OpAcquire && e.Type == history.Ok {
				cycles++
			}
		}
		gen = append(gen, float64(cycles)/benchLoop.Seconds())
		genOps = append(genOps, float64(ops)/benchLoop.Seconds())
		if err := t.reset(ctx); err != nil {
			b.Fatal(err)
		}
		fc, fo, err := floorLoop(ctx, redisAddr, pgDSN, sc.Clients, benchLoop, sc.TTL.Duration)
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, fc/benchLoop.Seconds())
		floorOps = append(floorOps, fo/benchLoop.Seconds())
	}
	g, f := median(gen), median(floor)
	b.ReportMetric(g, "gen-cycles/s")
	b.ReportMetric(f, "floor-cycles/s")
	b.ReportMetric(100*g/f, "gen/floor-%")
	// The same floor loop with each client a process of its own, as the
	// generator's clients are: what one process per client costs here.
	if err := t.reset(ctx); err != nil {
		b.Fatal(err)
	}
	var procs []float64
	for range 3 {
		c, err := floorProcesses(redisAddr, pgDSN, sc.Clients, benchLoop, sc.TTL.Duration)
		if err != nil {
			b.Fatal(err)
		}
		procs = append(procs, c/benchLoop.Seconds())
	}
	b.ReportMetric(median(procs), "floor-procs-cycles/s")
	b.ReportMetric(100*g/median(procs), "gen/floor-procs-%")
	b.ReportMetric(median(genOps), "gen-ops/s")
	b.ReportMetric(median(floorOps), "floor-ops/s")
	b.ReportMetric(0, "ns/op")
}

// floorProcessEnv makes the test binary one client of floorProcesses.
const floorProcessEnv = "LOCKSIM_FLOOR_PROCESS"

// floorProcesses runs floorLoop as n processes of one client each (this
// test binary, re-executed) and returns the cycles they made together.
func floorProcesses(redisAddr, pgDSN string, n int, d, ttl time.Duration) (float64, error) {
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0])
		cmds[i].Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d|%d", floorProcessEnv, redisAddr, pgDSN, d, ttl, i))
		cmds[i].Stdout = &outs[i]
		if err := cmds[i].Start(); err != nil {
			return 0, err
		}
	}
	total := 0.0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			return 0, fmt.Errorf("floor process %d: %v: %s", i, err, outs[i].String())
		}
		var cycles float64
		if _, err := fmt.Sscanf(outs[i].String(), "cycles %g", &cycles); err != nil {
			return 0, fmt.Errorf("floor process %d said %q", i, outs[i].String())
		}
		total += cycles
	}
	return total, nil
}

// maybeFloorProcess is one client of floorProcesses, when this test
// binary was re-executed as one (TestMain calls it): it loops, prints its
// cycles and exits.
func maybeFloorProcess() {
	spec := os.Getenv(floorProcessEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, "|")
	dn, _ := strconv.ParseInt(f[2], 10, 64)
	tn, _ := strconv.ParseInt(f[3], 10, 64)
	runtime.GOMAXPROCS(1) // as a worker runs
	cycles, _, err := floorLoop(context.Background(), f[0], f[1], 1, time.Duration(dn), time.Duration(tn))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("cycles %g\n", cycles)
	os.Exit(0)
}

// floorLoop is the loopback floor: n goroutines looping the generator's
// commands straight on the servers for d. It returns the cycles (granted
// acquires) and the operations (acquires tried, writes, releases).
func floorLoop(ctx context.Context, redisAddr, pgDSN string, n int, d, ttl time.Duration) (cycles, ops float64, err error) {
	unlock := redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`)
	var (
		wg         sync.WaitGroup
		nc, no     atomic.Int64
		errMu      sync.Mutex
		firstError error
	)
	deadline := time.Now().Add(d)
	for i := 0; i < n; i++ {
		rc := clients.NewRedisClient(redisAddr, 200*time.Millisecond)
		pc, err := pgx.Connect(ctx, pgDSN)
		if err != nil {
			return 0, 0, err
		}
		if err := rc.Ping(ctx).Err(); err != nil {
			return 0, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rc.Close()
			defer pc.Close(context.Background())
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			fail := func(err error) {
				errMu.Lock()
				if firstError == nil {
					firstError = err
				}
				errMu.Unlock()
			}
			for time.Now().Before(deadline) {
				token := clients.NewToken()
				no.Add(1)
				ok, err := rc.SetNX(ctx, "L", token, ttl).Result()
				if err != nil {
					fail(err)
					return
				}
				if !ok {
					time.Sleep(time.Duration(rng.Int64N(int64(benchBackoff) + 1)))
					continue
				}
				nc.Add(1)
				no.Add(2)
				var v int64
				if err := pc.QueryRow(ctx, `SELECT value FROM counter WHERE id = 1`).Scan(&v); err != nil {
					fail(err)
					return
				}
				if _, err := pc.Exec(ctx, `UPDATE counter SET value = $1 WHERE id = 1`, v+1); err != nil {
					fail(err)
					return
				}
				if err := unlock.Run(ctx, rc, []string{"L"}, token).Err(); err != nil {
					fail(fmt.Errorf("unlock: %w", err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(nc.Load()), float64(no.Load()), firstError
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
