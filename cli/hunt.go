package cli

// hunt.go: sim hunt, which searches fault schedules against a lock and
// shrinks the first violation to a story.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// huntOptions are sim hunt's flags.
type huntOptions struct {
	lock, storage, faults string
	baseline              string
	// clientCmd and baselineCmd are the client programs (split on
	// spaces) the hunted lock's and the baseline's clients run ("": the
	// harness's own worker).
	clientCmd, baselineCmd string
	ttl, budget            time.Duration
	runs, clients          int
	seed                   int64
	// realistic searches only fault sizes real machines have
	// (hunt.Space.Realistic).
	realistic  bool
	shard, out string
	shards     int
	backend    runner.Host
	// flags are the flags as given, to refuse one with no effect (nil:
	// none given).
	flags *pflag.FlagSet
}

func huntCmd() *cobra.Command {
	var o huntOptions
	sized, shaped := hunt.SearchableKinds()
	cmd := &cobra.Command{
		Use:   "hunt LOCK [--storage MODE] [--faults KIND,...] [--runs N|--budget D] [--seed S]",
		Short: "search fault schedules against a lock; shrink the first violation to a story",
		Long: `Search fault schedules against a lock on real servers, on the story
workload of every scenario: two or three clients each take the lock at
their turn, do a read-modify-write of the protected counter that takes
their work time (with --storage none, mutual exclusion alone: they hold it
that long) and release. A --client-cmd program whose hello says it
writes the protected storage is hunted with --storage plain unless told
otherwise: a program's lease ends where the program says, so a lease it
keeps using past that end shows only in what it writes. Faults strike at protocol events (the start, while
a client's acquire waits, once it is granted, once it has read, once it
has released) plus an offset. The fault kinds are the registry's: those
with a drawn size (` + strings.Join(sized, ", ") + `), each sized from its
kind's range relative to the TTL and aimed at a client or a node its
servers allow (power-loss only on Redis nodes given persistence everysec),
and those placed by shape (` + strings.Join(shaped, ", ") + `: a partition
as Jepsen's majorities ring or some of a client's links, replication-lag
and failover on nodes with replicas). The clients' turns and the lock's options (watchdog,
check_lease) are drawn too: work that outlasts the TTL is the TTL trap,
with no fault. The classic shapes of the literature come first, then
swarm draws (each kind in or out of a run), every candidate drawn from
the seed. A candidate counts only when 2 of 3 runs end unsafe; a run the
timing guard gives no verdict never counts. The servers are kept from one
candidate to the next and put back (keys flushed, clocks true, links
healed, storage reset); a failover's are started afresh.

The first finding is shrunk: faults dropped while it still fails (to a
1-minimal set), a third client dropped, the lock's options turned off,
each trigger moved to the earliest event where it fails every time, each size
bisected toward the point where it stops failing and rounded, and the
final story played three more times. Written to DIR: found.yaml (a
scenario sim run plays: the claims its run made, cause on the fault steps,
a counterfactual, the narration), original.yaml (the schedule as found),
hunt.json (what was searched, runs, seconds to find, shrink runs,
thresholds, how often the final story reproduced), schema.json (for the
editor line of the two stories) and run/, the final story played with its
counterfactual (report.html and its timeline).

Exit codes: 1 it found a violation, 0 the budget ran out with nothing found
(it says what it searched), 2 bad input or a harness failure, 130
interrupted (hunt.json keeps what it had).`,
		Example: `  sim hunt redlock                                  # every fault, mutual exclusion alone
  sim hunt redis --storage plain --faults pause --runs 10 --seed 1
  sim hunt redlock-no-validity --storage plain --faults latency,pause --baseline redlock
  sim hunt redis-plain-del --faults none --baseline redis
  sim hunt etcd --storage fenced --faults pause,latency --runs 40   # nothing should break it
  sim hunt redlock --faults partition,pause,latency                # nor this`,
		ValidArgsFunction: completeLocks,
		Args:              usage(cobra.ExactArgs(1), "hunt: name one lock (sim locks), e.g. sim hunt redis --faults pause"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock, o.flags = args[0], cmd.Flags()
			return cmdHunt(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.storage, "storage", "", "the protected storage `MODE`: none (mutual exclusion alone: a finding is the lock's own), "+strings.Join(scenarios.StorageModes[1:], ", ")+
		" (default: none; plain for a --client-cmd program that writes it)")
	f.BoolVar(&o.realistic, "realistic", false, "search only fault sizes real machines have: leave out a kind whose every draw is outside them (a clock-drift; docs/faults.md), as sim findings' hunts do")
	f.StringVar(&o.faults, "faults", "", "the fault kinds searched, `KIND,...`: "+strings.Join(hunt.Searchable(), ", ")+" (default: those the lock's servers and the storage allow; none: the clients' timing alone)")
	f.StringVar(&o.baseline, "baseline", "", "count only a schedule that breaks the hunted lock and, played again with lock `BASE` (same servers), leaves it safe: what a mutant does that the lock whose defence it breaks does not; the found story's counterfactual is BASE")
	f.StringVar(&o.clientCmd, "client-cmd", "", "hunt the lock as the client program `PROG` implements it (split on spaces; worker protocol v2, docs/protocol.md): only what its hello covers is searched, and found.yaml names it in client_cmd")
	f.StringVar(&o.baselineCmd, "baseline-cmd", "", "play --baseline's lock with the client program `PROG` instead of the harness's own worker (the maintained fork against the original, say)")
	f.IntVar(&o.clients, "clients", hunt.MostClients, fmt.Sprintf("the most clients a candidate has (`N`: %d or %d)", hunt.FewestClients, hunt.MostClients))
	f.DurationVar(&o.ttl, "ttl", 0, "the lease time clients ask for (`D`; default 500ms, or the lock's shortest lease when longer: etcd's 2s)")
	f.IntVar(&o.runs, "runs", 40, "candidates to play at most (`N`)")
	f.DurationVar(&o.budget, "budget", 0, "stop searching after `D` of wall time (default: only --runs bounds it)")
	f.Int64Var(&o.seed, "seed", 1, "seed `S` of every candidate")
	f.StringVar(&o.shard, "shard", "", "play only shard `I/N` of the candidates (the same --seed on every shard; sim hunt merge joins them); auto: the index from "+sharding.EnvJobIndex+" (a Kubernetes Indexed Job) or "+sharding.EnvShardIndex+", both from 0")
	f.IntVar(&o.shards, "shards", 0, "the shard count `N` of --shard auto (default: "+sharding.EnvShards+")")
	f.StringVar(&o.out, "out", "", "where found.yaml, hunt.json and run/ go (`DIR`; default runs/hunt-LOCK-<time>)")
	backendFlags(f, &o.backend)
	cmd.AddCommand(huntMergeCmd())
	return cmd
}

// probeProgram reads the hello of client program cmd before any server
// starts; nil when cmd is "" (none given).
func probeProgram(ctx context.Context, cmd string) (*scenarios.ClientProgram, error) {
	if cmd == "" {
		return nil, nil
	}
	argv := strings.Fields(cmd)
	h, err := runner.ProbeClientProgram(ctx, argv)
	if err != nil {
		return nil, err
	}
	p := runner.ClientProgramOf(argv, h)
	return &p, nil
}

// storageFor is the protected storage a hunt searches with when --storage
// is not given, and why: none (mutual exclusion alone) for a lock of
// locksim's; plain for a client program whose hello says it writes it.
// A program's lease ends where the program says it does, so a lease it
// keeps using after its own end (a grant whose validity was never
// checked, say) shows only in what it writes.
func storageFor(p *scenarios.ClientProgram) (mode, why string) {
	if p != nil && slices.Contains(p.Covered().Ops, "write") && slices.Contains(p.Covered().StorageModes, "plain") {
		return "plain", "the program writes the protected storage: a finding is what its lock lets through (--storage none: mutual exclusion alone)"
	}
	return "none", ""
}

// defaultHuntTTL is the lease a hunt's clients ask for when --ttl is not
// given: 500ms, or the lock's shortest lease when that is longer (etcd
// grants none under 2s, and faults are sized relative to the lease).
func defaultHuntTTL(lock string) time.Duration {
	ttl := hunt.DefaultTTL
	if spec, err := clients.Lookup(lock); err == nil && spec.MinTTL > ttl {
		ttl = spec.MinTTL
	}
	return ttl
}

func cmdHunt(ctx context.Context, o huntOptions, stdout, stderr io.Writer) error {
	var kinds []string
	if o.faults != "" {
		kinds = strings.Split(o.faults, ",")
	}
	program, err := probeProgram(ctx, o.clientCmd)
	if err != nil {
		return err
	}
	if o.ttl == 0 {
		o.ttl = defaultHuntTTL(o.lock)
	}
	storageWhy := ""
	if o.storage == "" {
		o.storage, storageWhy = storageFor(program)
	}
	sp, err := hunt.NewSpace(o.lock, o.storage, kinds, o.ttl, o.clients)
	if err != nil {
		return input.AsFlag(err)
	}
	if o.realistic {
		sp = sp.Realistic()
	}
	if len(sp.Kinds) == 0 && o.faults != "none" {
		return fmt.Errorf("hunt: no fault kind can strike %s with --storage %s (--faults none hunts the clients' timing alone)", o.lock, o.storage)
	}
	if program != nil {
		if sp, err = sp.WithProgram(strings.Fields(o.clientCmd), *program, o.faults != ""); err != nil {
			return input.AsFlag(err)
		}
	}
	if o.baseline != "" {
		if sp, err = sp.WithBaseline(o.baseline); err != nil {
			return input.AsFlag(err)
		}
	}
	if o.baselineCmd != "" {
		base, err := probeProgram(ctx, o.baselineCmd)
		if err != nil {
			return err
		}
		if sp, err = sp.WithBaselineProgram(strings.Fields(o.baselineCmd), *base, o.faults != ""); err != nil {
			return input.AsFlag(err)
		}
	}
	if o.runs < 1 || o.budget < 0 {
		return errors.New("--runs: expected 1 or more; --budget: expected a positive duration")
	}
	if err := checkBackend(o.backend); err != nil {
		return err
	}
	if err := refuseIdle(o.flags, huntIdle(o)...); err != nil {
		return err
	}
	ho := hunt.Options{Space: sp, Runs: o.runs, Budget: o.budget, Seed: o.seed}
	if o.shard, err = resolveShard(o.shard, o.shards, os.LookupEnv); err != nil {
		return err
	}
	if o.shard != "" {
		s, err := sharding.Parse(o.shard)
		if err != nil {
			return input.AsFlag(err)
		}
		ho.Shard, ho.Of = s.I, s.N
	}
	if o.out == "" {
		o.out = filepath.Join("runs", fmt.Sprintf("hunt-%s-%s", o.lock, time.Now().Format("20060102-150405")))
	}
	dir, err := claimOut(o.out, outdir.Hunt, fmt.Sprintf("sim hunt %s seed %d", o.lock, o.seed))
	if err != nil {
		return err
	}
	cands, err := dir.Sub("candidates", outdir.Runs, outID("sim hunt"))
	if err != nil {
		return asFlag("--out", err)
	}
	candidates := cands.Path()
	defer outdir.RemoveAll(candidates)
	ctx, stop := untilStopped(ctx)
	defer stop()
	candidate, closeServers := hunt.OnServers(candidates, runner.Options{Seed: o.seed, Host: o.backend})
	defer closeServers()
	ho.Play = candidate
	ho.Say = func(format string, args ...any) { fmt.Fprintf(stderr, "  "+format+"\n", args...) }
	searched := sp.FaultsSearched()
	vs := ""
	if sp.Baseline != "" {
		vs = ", baseline " + sp.Baseline
	}
	fmt.Fprintf(stderr, "sim hunt %s (storage %s, faults %s, up to %d clients, ttl %v%s, seed %d)\n", o.lock, o.storage, searched, sp.Clients, o.ttl, vs, o.seed)
	if len(sp.ClientCmd) > 0 {
		fmt.Fprintf(stderr, "  clients: %s\n", strings.Join(sp.ClientCmd, " "))
	}
	if storageWhy != "" {
		fmt.Fprintf(stderr, "  storage %s: %s\n", o.storage, storageWhy)
	}
	if len(sp.LeftOut) > 0 {
		fmt.Fprintf(stderr, "  left out of the search, the program's hello not covering it: %s\n", strings.Join(sp.LeftOut, "; "))
	}
	if len(sp.Unrealistic) > 0 {
		fmt.Fprintf(stderr, "  left out of the search, every size it draws outside what real machines have (--realistic): %s\n", strings.Join(sp.Unrealistic, "; "))
	}
	res, found, original, err := hunt.Run(ctx, ho)
	closeServers() // the final story is replayed on servers of its own
	file, werr := hunt.WriteDir(dir, res, found, original)
	if werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return interrupted("interrupted after %s; %s keeps what the hunt had", res.Runs(), filepath.Join(o.out, "hunt.json"))
		}
		return err
	}
	if !res.Found {
		fmt.Fprintf(stdout, "nothing found: %s (%d classic shape(s), then swarm draws) of %s against %s (%s) in %.0fs; %s\n",
			res.Runs(), min(res.Shapes, res.Candidates), searched, o.lock, sp.CheckedWords(), res.Seconds, filepath.Join(o.out, "hunt.json"))
		return nil
	}
	// The final story, played as sim run plays any: its run directory
	// with the counterfactual, report.html and its timeline.
	sc, err := scenarios.Find(file)
	if err != nil {
		return err
	}
	out, perr := reports.Play(ctx, sc, runner.Options{Out: filepath.Join(o.out, "run"), Seed: o.seed, Counterfactual: true, Host: o.backend})
	fmt.Fprintf(stdout, "FOUND %s: %s\n", o.lock, res.Summary)
	fmt.Fprintf(stdout, "  %s\n", res.Counts())
	if n := res.NotReproduced(); n != "" {
		fmt.Fprintf(stdout, "  %s\n", n)
	}
	if res.Reproduced < hunt.MustBreak {
		fmt.Fprintf(stdout, "  %s, fewer than %d: a violation this machine's timing gives now and then, not every time\n", res.ReproducedLine(), hunt.MustBreak)
	}
	for _, t := range res.Thresholds {
		fmt.Fprintf(stdout, "  %s\n", t)
	}
	fmt.Fprintf(stdout, "  %s (sim run %s --counterfactual)\n", file, file)
	switch {
	case perr != nil:
		warn(stderr, fmt.Errorf("replaying %s: %w", file, perr))
	case out != nil:
		cf := ""
		if c := out.Counterfactual; c != nil {
			cf = fmt.Sprintf("; without the cause (%s): %s", c.Change, c.Verdict)
		}
		fmt.Fprintf(stdout, "  replayed: %s%s; %s\n", out.Check.Verdict, cf, filepath.Join(out.Dir, "report.html"))
	}
	return errMismatch // a finding, as --expect safe fails
}

func huntMergeCmd() *cobra.Command {
	var out string
	var partial bool
	cmd := &cobra.Command{
		Use:   "merge DIR... [--out DIR]",
		Short: "join the shards of a hunt (sim hunt --shard I/N): one hunt.json, and the finding with the fewest faults",
		Long: `Join the directories of the N shards of one hunt (sim hunt LOCK --seed S
--shard I/N, for I from 1 to N, with the same lock, storage, faults and
TTL): check that they are one hunt, each shard once, add up their runs,
and keep the finding whose final story has the fewest faults, with its
found.yaml, original.yaml and schema.json. A shard missing (a lost pod)
is refused, since "nothing found" would then cover candidates nobody
played; --partial merges what is there and lists the missing shards in
hunt.json and on stdout. Exit codes as sim hunt's: 1 a shard found a
violation, 0 none did, 2 bad input.`,
		Example: `  sim hunt merge hunt-1 hunt-2 hunt-3 --out hunt`,
		Args:    usage(cobra.MinimumNArgs(1), "hunt merge: name the shards' directories, e.g. sim hunt merge hunt-1 hunt-2"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdHuntMerge(args, out, partial, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where the merged hunt goes (`DIR`; default runs/hunt-merge-<time>)")
	cmd.Flags().BoolVar(&partial, "partial", false, "merge even when shards are missing; hunt.json's missing_shards lists them")
	return cmd
}

func cmdHuntMerge(dirs []string, out string, partial bool, stdout io.Writer) error {
	if out == "" {
		out = filepath.Join("runs", "hunt-merge-"+time.Now().Format("20060102-150405"))
	}
	if err := checkOutDir(out, outdir.Hunt); err != nil {
		return err
	}
	var shards []*hunt.Result
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "hunt.json"))
		if err != nil {
			return fmt.Errorf("%s: not a hunt's directory: %v", dir, err)
		}
		var r hunt.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %v", filepath.Join(dir, "hunt.json"), err)
		}
		shards = append(shards, &r)
	}
	res, best, err := hunt.Merge(shards, dirs, partial)
	if err != nil {
		return err
	}
	dir, err := claimOut(out, outdir.Hunt, "sim hunt merge "+res.Lock)
	if err != nil {
		return err
	}
	if best >= 0 {
		for _, name := range []string{"found.yaml", "original.yaml", "schema.json"} {
			b, err := os.ReadFile(filepath.Join(dirs[best], name))
			if err != nil {
				return err
			}
			if err := dir.WriteFile(name, b); err != nil {
				return err
			}
		}
	}
	if _, err := hunt.WriteDir(dir, res, nil, nil); err != nil { // hunt.json; the stories are the shard's, copied above
		return err
	}
	if len(res.MissingShards) > 0 {
		fmt.Fprintf(stdout, "partial: shard(s) %s missing, their candidates not searched\n", strings.Join(res.MissingShards, ", "))
	}
	if !res.Found {
		fmt.Fprintf(stdout, "nothing found in %s: %s; %s\n", res.Shard, res.Runs(), filepath.Join(out, "hunt.json"))
		return nil
	}
	fmt.Fprintf(stdout, "FOUND %s in %s (shard directory %s): %s; %s\n", res.Lock, res.Shard, dirs[best], res.Summary, filepath.Join(out, "found.yaml"))
	return errMismatch
}
