package hunt

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/runner"
)

// Played is what one run of a story came to.
type Played struct {
	Verdict checker.Verdict
	Summary string
	Events  []history.Event
	// Reused: the run played on servers kept from the one before.
	Reused bool
	// Story is the story played (the hunter sets it).
	Story *Story
}

// Player plays a story once: on real servers for `sim hunt` (runner.Run),
// a function of the plan in the tests of the search and the shrinker.
type Player func(ctx context.Context, s *Story) (Played, error)

// Options are a hunt's choices.
type Options struct {
	Space Space
	// Runs bounds the candidates played (0: 40); Budget the wall time of
	// the search (0: none). The shrink that follows a finding is bounded
	// by ShrinkRuns (0: 60).
	Runs       int
	Budget     time.Duration
	ShrinkRuns int
	Seed       int64
	// Shard, Of split the candidates among machines: this hunt plays the
	// candidates i with i % Of == Shard-1 (1 of 1: all).
	Shard, Of int
	Play      Player
	// Say receives a line of progress (nil: none).
	Say func(format string, args ...any)
	// Progress is told of each story run as it ends (nil: none), for a
	// view that follows the hunt (sim workshop's hunt page).
	Progress func(Progress)
}

// Phase is the part of a hunt a story run belongs to.
type Phase string

// The phases of a hunt, in order.
const (
	PhaseCandidates   Phase = "candidates"
	PhaseShrink       Phase = "shrink"
	PhaseReproduction Phase = "reproduction"
)

// Progress is one story run of a hunt, as it ends.
type Progress struct {
	Phase Phase
	// Played is the run: its story, verdict and history.
	Played Played
	// Candidates, StoryRuns and the runs of the current phase are the
	// hunt's counts so far (Result's).
	Candidates, StoryRuns, PhaseRuns int
}

// Result is hunt.json: what was searched, what was found, how it was
// shrunk and how well the final story reproduces.
type Result struct {
	Found   bool     `json:"found"`
	Lock    string   `json:"lock"`
	Storage string   `json:"storage"`
	Faults  []string `json:"faults_searched"`
	// Baseline is the lock a finding had to leave safe ("" none).
	Baseline string `json:"baseline,omitempty"`
	// ClientCmd and BaselineCmd are the client programs the hunted lock's
	// and the baseline's clients ran (none: the harness's own worker);
	// LeftOut what the program's hello kept out of the search.
	ClientCmd   []string `json:"client_cmd,omitempty"`
	BaselineCmd []string `json:"baseline_cmd,omitempty"`
	LeftOut     []string `json:"left_out,omitempty"`
	TTL         string   `json:"ttl"`
	Seed        int64    `json:"seed"`
	Shard       string   `json:"shard"`
	// Candidates counts the candidates played. The story runs are
	// counted by phase, as sim hunt prints them: CandidateRuns those the
	// candidates took (a candidate that fails once is played up to three
	// times, the baseline twice more and once at each nudge, Plan.Nudged),
	// ShrinkRuns the shrink's (its proof of minimality included),
	// ReproductionRuns the final story's (and those of each plan it fell
	// back to); StoryRuns is their sum.
	// A merge adds up every shard's.
	Candidates       int     `json:"candidates"`
	CandidateRuns    int     `json:"candidate_runs"`
	ShrinkRuns       int     `json:"shrink_runs"`
	ReproductionRuns int     `json:"reproduction_runs"`
	StoryRuns        int     `json:"story_runs"`
	SecondsToFind    float64 `json:"seconds_to_find,omitempty"`
	Seconds          float64 `json:"seconds"`
	// Shapes counts the classic shapes tried before the swarm draws.
	Shapes      int    `json:"classic_shapes"`
	FaultsFound int    `json:"faults_before,omitempty"`
	FaultsFinal int    `json:"faults_after,omitempty"`
	Original    *Plan  `json:"original,omitempty"`
	Final       *Plan  `json:"final,omitempty"`
	Summary     string `json:"summary,omitempty"`
	// Reproduced of ReproducedOf runs of the final story were unsafe as
	// its story tells, every step ending as it claims (ReproducedOf is
	// ReproductionRuns unless the hunt fell back). OtherWay more ended
	// unsafe (or hung) by another path: a step ended otherwise, as where
	// a size bisected onto a timing edge lands on either side of it.
	Reproduced   int `json:"reproduced,omitempty"`
	ReproducedOf int `json:"reproduced_of,omitempty"`
	OtherWay     int `json:"other_way,omitempty"`
	// Thresholds say, per magnitude, where unsafe turns safe.
	Thresholds []string `json:"thresholds,omitempty"`
	// OneMinimal: removing any one fault of the final story made the
	// violation go away (for a story with no fault: shortening the work
	// did, its counterfactual).
	OneMinimal bool `json:"one_minimal"`
	// ServersReused counts the story runs (of StoryRuns) that played on the servers
	// the run before left, put back as new, instead of starting their
	// own (runner.Kept).
	ServersReused int `json:"servers_reused"`
	// FellBack names the plan the final story is when the shrunk one did
	// not reproduce as it tells: unsafe in fewer than 2 of 3 runs, or
	// unsafe by another path in one of them ("" when it did).
	FellBack string `json:"fell_back_to,omitempty"`
	// Unknown counts the story runs (of StoryRuns) the timing guard gave
	// no verdict: never a finding.
	Unknown int `json:"unknown_runs"`
	// HarnessFailures counts the story runs (of StoryRuns) that ended in a
	// harness failure (a server or client that would not start, a client
	// that did not answer): each candidate's is played again on fresh
	// servers, never counted as a finding.
	HarnessFailures int    `json:"harness_failures"`
	Interrupted     string `json:"interrupted,omitempty"`
	// MissingShards lists the shards a partial merge (sim hunt merge
	// --partial) did not have: what they would have played was not searched.
	MissingShards []string `json:"missing_shards,omitempty"`
}

// hunter is one hunt in progress.
type hunter struct {
	o       Options
	res     *Result
	started time.Time
	played  int // story runs, all phases
	// phase is the count of story runs the current phase adds to
	// (Result's CandidateRuns, ShrinkRuns, ReproductionRuns).
	phase *int
	// baselineBroke: the last plan that broke the lock broke the
	// baseline too; edge, when only with the later clients' asks nudged
	// (Plan.Nudged), says by how much ("0.25 TTL later").
	baselineBroke bool
	edge          string
	// brokeAs says how the last run that broke the lock broke it
	// (Played.Broke): UNSAFE, or HUNG.
	brokeAs string
	// unbisected is the shrunk plan before its sizes were bisected.
	unbisected Plan
	// failedInRow counts the story runs in a row that ended in a harness
	// failure.
	failedInRow int
}

// DESIGN's rule for a finding: a plan breaks the lock when MustBreak of
// Plays runs of it do (and, in the shrink, every one of Plays); the
// final story is played Plays more times and reproduces when MustBreak do.
const (
	Plays     = 3
	MustBreak = 2
)

// A hunt's defaults: the candidates it plays, the story runs its shrink
// may take, and the lease its clients ask for (a lock with a longer
// shortest lease asks for that).
const (
	DefaultRuns       = 40
	DefaultShrinkRuns = 60
	DefaultTTL        = 500 * time.Millisecond
)

// Run searches, and shrinks the first finding. It returns the result
// and, when it found one, the final story (with its claims and
// narration) and the original one.
func Run(ctx context.Context, o Options) (*Result, *Story, *Story, error) {
	if o.Runs <= 0 {
		o.Runs = DefaultRuns
	}
	if o.ShrinkRuns <= 0 {
		o.ShrinkRuns = DefaultShrinkRuns
	}
	if o.Of <= 0 {
		o.Shard, o.Of = 1, 1
	}
	if o.Say == nil {
		o.Say = func(string, ...any) {}
	}
	sp := o.Space
	h := &hunter{o: o, started: time.Now(), res: &Result{Lock: sp.Lock, Storage: sp.Storage, Faults: sp.Kinds, Baseline: sp.Baseline,
		ClientCmd: sp.ClientCmd, BaselineCmd: sp.BaselineCmd, LeftOut: sp.LeftOut,
		TTL: sp.TTL.String(), Seed: o.Seed, Shard: fmt.Sprintf("%d/%d", o.Shard, o.Of), Shapes: len(sp.classic())}}
	defer func() { h.res.Seconds = round2(time.Since(h.started).Seconds()) }()
	h.phase = &h.res.CandidateRuns
	var found *Plan
	for i := 0; h.res.Candidates < o.Runs && found == nil; i++ {
		if i%o.Of != o.Shard-1 {
			continue
		}
		if o.Budget > 0 && time.Since(h.started) > o.Budget {
			break
		}
		p := sp.Candidate(o.Seed, i)
		h.res.Candidates++
		fails, err := h.fails(ctx, p)
		if err != nil {
			return h.stop(ctx, err)
		}
		verdict := map[bool]string{true: fmt.Sprintf("%s (%d of %d)", h.brokeAs, MustBreak, Plays), false: "no violation"}[fails]
		if h.baselineBroke {
			verdict = "unsafe, and so is " + sp.Baseline + ": not counted"
			if h.edge != "" {
				verdict = fmt.Sprintf("unsafe, and so is %s with the later clients asking %s: on a timing edge the two locks share, not counted", sp.Baseline, h.edge)
			}
		}
		o.Say("candidate %d: %s: %s", i+1, describePlan(p, sp.TTL), verdict)
		if fails {
			found = &p
		}
	}
	if found == nil {
		return h.res, nil, nil, nil
	}
	h.res.Found = true
	h.res.SecondsToFind = round2(time.Since(h.started).Seconds())
	orig := clonePlan(*found)
	h.res.Original, h.res.FaultsFound = &orig, len(orig.Faults)
	original, err := sp.build(*found, h.meta("original", *found), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	final, err := h.shrink(ctx, *found)
	if err != nil {
		return h.stop(ctx, err)
	}
	h.res.Final, h.res.FaultsFinal = &final, len(final.Faults)
	h.phase = &h.res.ReproductionRuns
	story, err := h.reproduce(ctx, final)
	if err != nil {
		return h.stop(ctx, err)
	}
	// A shrunk story that no longer reproduces as it tells (its sizes
	// bisected onto an edge this machine's timing does not hold: unsafe
	// now and then, or by one path now and another then, which a replay
	// would contradict) gives way to the plan before the bisection, then
	// to the plan as found.
	for _, alt := range []struct {
		what string
		p    Plan
	}{{"the shrunk plan before its sizes were bisected", h.unbisected}, {"the plan as found", orig}} {
		if (h.res.Reproduced >= MustBreak && h.res.OtherWay == 0) || len(alt.p.Turns) == 0 {
			break
		}
		o.Say("the shrunk story %s: trying %s", h.res.ReproducedLine(), alt.what)
		h.res.Reproduced, h.res.ReproducedOf, h.res.OtherWay, h.res.Thresholds, h.res.OneMinimal = 0, 0, 0, nil, false
		final = clonePlan(alt.p)
		h.res.Final, h.res.FaultsFinal, h.res.FellBack = &final, len(final.Faults), alt.what
		if story, err = h.reproduce(ctx, final); err != nil {
			return h.stop(ctx, err)
		}
	}
	return h.res, story, original, nil
}

// stop ends a hunt on an error: an interruption keeps what was found.
func (h *hunter) stop(ctx context.Context, err error) (*Result, *Story, *Story, error) {
	if ctx.Err() != nil {
		h.res.Interrupted = ctx.Err().Error()
		return h.res, nil, nil, ctx.Err()
	}
	return nil, nil, nil, err
}

// play runs plan p once, as the story called name (candidate, found),
// and says whether it broke the lock (Played.Broke).
func (h *hunter) play(ctx context.Context, p Plan, name string) (bool, Played, error) {
	s, err := h.o.Space.build(p, h.meta(name, p), nil)
	if err != nil {
		return false, Played{}, fmt.Errorf("candidate %s: %w", describePlan(p, h.o.Space.TTL), err)
	}
	out, err := h.run(ctx, s)
	broke := out.Broke()
	if broke {
		h.brokeAs = "UNSAFE"
		if out.Verdict != checker.Unsafe {
			h.brokeAs = "HUNG (a call never returned)"
		}
	}
	return broke, out, err
}

// Broke says whether the run broke the lock: unsafe, or a call that
// never returned (hung, with the harness's note of the hung call): a
// finding a hunt shrinks as any other.
func (p Played) Broke() bool {
	_, hung := runner.Hung(p.Events)
	return p.Verdict == checker.Unsafe || hung
}

// harnessReplays bounds the replays of a story run that ended in a
// harness failure (a server or client that would not start, a client
// that did not answer); the failed run leaves its kept servers spoiled,
// so a replay starts fresh ones (runner.Kept). A failure past the
// replays is harnessFailuresInRow in a row, and the hunt stops.
const (
	harnessReplays       = 2
	harnessFailuresInRow = harnessReplays + 1
)

// run plays story s and counts the run: in StoryRuns, in the current
// phase's count, and in Unknown and ServersReused when it was. A run that
// ends in a harness failure is counted in HarnessFailures, never judged,
// and played again (harnessReplays); the hunt stops on the third failure
// in a row. A run the timing guard leaves unknown is counted in Unknown
// and played again, up to runner.UnknownTries in all.
func (h *hunter) run(ctx context.Context, s *Story) (Played, error) {
	for tries := 1; ; {
		h.played++
		h.res.StoryRuns++
		if h.phase != nil {
			*h.phase++
		}
		out, err := h.o.Play(ctx, s)
		out.Story = s
		if err != nil {
			if ctx.Err() != nil {
				return out, err
			}
			h.res.HarnessFailures++
			h.failedInRow++
			if h.failedInRow >= harnessFailuresInRow {
				return out, fmt.Errorf("%d harness failures in a row, the last: %w", h.failedInRow, err)
			}
			h.o.Say("harness failure (not a verdict): %v; playing it again on fresh servers", err)
			continue
		}
		h.failedInRow = 0
		if out.Verdict == checker.Unknown {
			h.res.Unknown++
		}
		if out.Reused {
			h.res.ServersReused++
		}
		if f := h.o.Progress; f != nil && h.phase != nil {
			f(Progress{Phase: h.phaseName(), Played: out, Candidates: h.res.Candidates, StoryRuns: h.res.StoryRuns, PhaseRuns: *h.phase})
		}
		if out.Verdict == checker.Unknown && tries < runner.UnknownTries && ctx.Err() == nil {
			tries++
			continue
		}
		return out, nil
	}
}

// phaseName names the phase whose count h.phase is.
func (h *hunter) phaseName() Phase {
	switch h.phase {
	case &h.res.ShrinkRuns:
		return PhaseShrink
	case &h.res.ReproductionRuns:
		return PhaseReproduction
	}
	return PhaseCandidates
}

// fails says whether plan p fails: unsafe in at least 2 of 3 runs (a
// first run that is not unsafe ends it), and the baseline safe.
func (h *hunter) fails(ctx context.Context, p Plan) (bool, error) {
	h.baselineBroke, h.edge = false, ""
	unsafe := 0
	for run := 0; run < Plays; run++ {
		bad, _, err := h.play(ctx, p, "candidate")
		if err != nil {
			return false, err
		}
		if bad {
			unsafe++
		}
		if unsafe >= MustBreak || unsafe+(Plays-1-run) < MustBreak || (run == 0 && !bad) {
			break
		}
	}
	if unsafe < MustBreak {
		return false, nil
	}
	return h.baselineSafe(ctx, p)
}

// baselineSafe says whether plan p, which broke the lock, counts: with
// no baseline it does; with one, only if the baseline keeps it safe,
// twice (an unknown run proves nothing), and once more with the later
// clients' asks moved EdgeMargin either way: a plan that the baseline
// survives only at the instant drawn sits on a timing edge both locks
// share (where a lease's end falls against a server's expiry timer), and
// is no defence the hunted lock lacks.
func (h *hunter) baselineSafe(ctx context.Context, p Plan) (bool, error) {
	if h.o.Space.Baseline == "" {
		return true, nil
	}
	base := h.o.Space
	base.Lock, base.Baseline, base.ClientCmd = base.Baseline, "", base.BaselineCmd
	meta := Meta{Name: "hunt-baseline", Title: "baseline", Source: "sim hunt", Explain: "baseline"}
	for _, play := range []struct {
		d    float64
		runs int
	}{{0, 2}, {EdgeMargin, 1}, {-EdgeMargin, 1}} {
		q := p.Nudged(play.d)
		if play.d != 0 && slices.Equal(q.Turns, p.Turns) {
			continue // no later client to move
		}
		s, err := base.build(q, meta, nil)
		if err != nil {
			return false, err
		}
		for run := 0; run < play.runs; run++ {
			out, err := h.run(ctx, s)
			if err != nil {
				return false, err
			}
			if out.Verdict != checker.Safe {
				h.baselineBroke = true
				if play.d != 0 {
					h.edge = nudgeWords(play.d)
				}
				return false, nil
			}
		}
	}
	return true, nil
}
