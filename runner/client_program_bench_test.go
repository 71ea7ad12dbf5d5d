package runner

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/locksim/locksim/scenarios"
)

// BenchmarkClientProgramVsGoWorker plays one story of its servers with
// each example client program and with the harness's own Go worker, five
// times each (whatever -benchtime says), and reports the median wall
// time of a run (servers included) of each and their ratio
// (program/go-worker; the target is at most 1.5). Run it with
// -benchtime 1x: make bench does.
func BenchmarkClientProgramVsGoWorker(b *testing.B) {
	node, _ := exec.LookPath("node")
	example := func(path string) string {
		abs, err := filepath.Abs(filepath.Join("..", "examples", path))
		if err != nil {
			b.Fatal(err)
		}
		return abs
	}
	for _, c := range []struct {
		name, story string
		argv        []string
	}{
		{"redis-py", "redis-failover", []string{example("redis-py/client.py")}},
		{"redis-semaphore", "redlock-crash-restart", []string{node, example("redis-semaphore/client.js")}},
		{"node-redlock", "redlock-crash-restart", []string{node, example("node-redlock/client.js")}},
		{"sesamecare-redlock", "redlock-crash-restart", []string{node, example("sesamecare-redlock/client.js")}},
		{"kazoo", "zookeeper-pause", []string{example("kazoo/client.py")}},
		{"zookeeper-writelock", "zookeeper-pause", []string{example("zookeeper-writelock/client")}},
		{"python-etcd3", "etcd-pause", []string{example("python-etcd3/client.py")}},
	} {
		b.Run(c.name, func(b *testing.B) {
			sc, err := scenarios.Find(c.story)
			if err != nil {
				b.Fatal(err)
			}
			median := func(argv []string) time.Duration {
				var took []time.Duration
				for i := 0; i < 5; i++ {
					out, err := Run(context.Background(), sc, Options{Out: filepath.Join(b.TempDir(), "run"), ClientCmd: argv})
					if err != nil {
						b.Fatalf("%s with %v: %v", c.story, argv, err)
					}
					took = append(took, out.Duration)
				}
				slices.Sort(took)
				return took[len(took)/2]
			}
			for i := 0; i < b.N; i++ {
				goWorker, program := median(nil), median(c.argv)
				b.ReportMetric(goWorker.Seconds(), "s-go-worker")
				b.ReportMetric(program.Seconds(), "s-program")
				b.ReportMetric(program.Seconds()/goWorker.Seconds(), "ratio")
			}
		})
	}
}
