package cli

// findings_hunt.go: a subject's hunt, as sim findings runs it, and the
// words the page names its find by.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/hunt"
)

// trap names the shared schedule a hunt's shrunk story p is, when it is
// one every lock without fencing loses to: no fault at all (the work
// outlasts the TTL: redis-ttl-expiry's trap), or one pause of the first
// holder past the TTL (the schedule of s's pause story, findings'
// NoticeStories). "" for any other story.
func trap(p *hunt.Plan, s findings.Subject) string {
	if p == nil {
		return ""
	}
	switch f := p.Faults; {
	case len(f) == 0:
		return "the TTL trap (work that outlasts the TTL, the schedule of redis-ttl-expiry)"
	case len(f) == 1 && f[0].Kind == "pause" && f[0].Client == 1 && f[0].X >= 1:
		for _, m := range s.Measures() {
			if m.Fault == "pause" && m.Story != "" {
				return "the pause past the TTL (the schedule of " + m.Story + ")"
			}
		}
		return "the pause past the TTL"
	}
	return ""
}

// schedule describes the faults of a hunt's shrunk plan, "; " between
// them ("no fault" for none).
func schedule(res hunt.Result) string {
	ttl, err := time.ParseDuration(res.TTL)
	if res.Final == nil || err != nil {
		return ""
	}
	if len(res.Final.Faults) == 0 {
		return "no fault"
	}
	return res.Final.DescribeFaults(ttl)
}

// huntSubject hunts s as sim hunt would, told its name (and, for a
// program, the lock it stands in for as its baseline), into out.
func huntSubject(ctx context.Context, s findings.Subject, out string, o findingsOptions) *findings.Hunt {
	ho := huntOptions{lock: s.Lock, clients: hunt.MostClients, runs: o.huntRuns, budget: o.huntBudget, seed: o.seed, out: out, realistic: true}
	cmd := "bin/sim hunt " + s.Lock + " --realistic"
	// Differential where it stands in for a lock: what it does worse than
	// that lock.
	if spec := clients.Registered(s.Lock); s.Program != nil {
		ho.clientCmd, ho.baseline = strings.Join(s.Program, " "), s.Lock
		cmd += fmt.Sprintf(" --client-cmd %q", ho.clientCmd)
	} else {
		ho.baseline = spec.Like
	}
	if ho.baseline != "" {
		cmd += " --baseline " + ho.baseline
	}
	cmd += fmt.Sprintf(" --budget %v --runs %d --seed %d", o.huntBudget, o.huntRuns, o.seed)
	h := &findings.Hunt{Command: cmd, Baseline: ho.baseline}
	log, err := os.Create(out + ".log")
	if err != nil {
		h.Error = err.Error()
		return h
	}
	defer log.Close()
	herr := cmdHunt(ctx, ho, log, log)
	b, err := os.ReadFile(filepath.Join(out, "hunt.json"))
	if err != nil {
		h.Error = fmt.Sprintf("%v (the hunt's log: %s.log)", herr, out)
		return h
	}
	var res hunt.Result
	if err := json.Unmarshal(b, &res); err != nil {
		h.Error = err.Error()
		return h
	}
	h.Found, h.Summary, h.Runs, h.Seconds = res.Found, res.Summary, res.Candidates, res.Seconds
	if res.Found {
		h.Reproduced = res.ReproducedLine()
	}
	if res.Found && h.Baseline == "" {
		h.Trap = trap(res.Final, s)
	}
	if res.Found && h.Trap == "" {
		h.Schedule = schedule(res)
	}
	if res.Found {
		if y, err := os.ReadFile(filepath.Join(out, "found.yaml")); err == nil {
			h.Story = string(y)
		}
	}
	return h
}

// slug is a subject's name as a folder name.
func slug(name string) string {
	return strings.NewReplacer(" (", "-", ")", "", " ", "-").Replace(name)
}

// lockModules lists the Go modules of the registered locks' libraries,
// with the versions the binary was built with.
func lockModules() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var out []string
	for _, d := range bi.Deps {
		for _, p := range []string{"github.com/go-redsync/redsync", "github.com/bsm/redislock", "github.com/redis/rueidis", "github.com/redis/go-redis",
			"go.etcd.io/etcd/client/v3", "github.com/go-zookeeper/zk", "github.com/jackc/pgx", "github.com/golang-migrate/migrate", "github.com/pressly/goose"} {
			if strings.HasPrefix(d.Path, p) {
				out = append(out, d.Path+" "+d.Version)
			}
		}
	}
	return out
}
