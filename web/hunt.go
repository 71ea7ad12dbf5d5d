package web

// hunt.go: the hunt page's run. A hunt is one of a few presets (the page
// names a preset, never a lock or a flag), played by hunt.Run on real
// servers as sim hunt plays it: each story run it plays (candidates, the
// shrink, the reproduction) is drawn live with report.html's timeline,
// and its Say lines and Progress counts go to the page. Once it has
// found and shrunk a story, the page plays the found story and the
// hand-written one it finds again, and shows them side by side. It
// counts as the one run at a time.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/hunt"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// HuntPreset is a hunt the page can start.
type HuntPreset struct {
	// ID names it in a request.
	ID string `json:"id"`
	// Title and About say what it shows.
	Title string `json:"title"`
	About string `json:"about"`
	// Lock, Storage, Faults (nil: every kind the lock allows), TTL,
	// Clients, Seed and Runs are as sim hunt's flags; ShrinkRuns bounds
	// the shrink (hunt.Options), Budget the search's wall time.
	Lock       string        `json:"lock"`
	Storage    string        `json:"storage"`
	Faults     []string      `json:"faults,omitempty"`
	TTL        time.Duration `json:"ttl_ns"`
	Clients    int           `json:"clients"`
	Seed       int64         `json:"seed"`
	Runs       int           `json:"runs"`
	ShrinkRuns int           `json:"shrink_runs"`
	Budget     time.Duration `json:"budget_ns"`
	// Story is the catalogue's hand-written story the hunt finds again,
	// shown beside the found one.
	Story string `json:"story"`
}

// Command is the preset as a sim hunt command line.
func (p HuntPreset) Command() string {
	c := fmt.Sprintf("sim hunt %s --storage %s", p.Lock, p.Storage)
	if len(p.Faults) > 0 {
		c += " --faults " + strings.Join(p.Faults, ",")
	}
	return c + fmt.Sprintf(" --ttl %v --clients %d --runs %d --seed %d", p.TTL, p.Clients, p.Runs, p.Seed)
}

// huntPresets are the hunts the page offers.
var huntPresets = []HuntPreset{{
	ID:    "redlock",
	Title: "sim hunt finds Kleppmann's clock jump by itself",
	About: "Told only the lock, sim hunt draws fault schedules against Redlock on five real redis-servers " +
		"(the classic shapes of the literature first), plays each candidate until one breaks mutual exclusion " +
		"in 2 of 3 runs, then shrinks it: faults dropped while it still fails, each trigger moved earlier, " +
		"each size bisected. At the end, the story it found beside the one Kleppmann wrote by hand.",
	Lock: "redlock", Storage: "none", TTL: hunt.DefaultTTL, Clients: 3, Seed: 1, Runs: 10,
	ShrinkRuns: 40, Budget: 2 * time.Minute, Story: "redlock-clock-jump",
}}

// liveHunt is a hunt started from the page.
type liveHunt struct {
	preset HuntPreset
	cancel context.CancelFunc
	dir    string // its name in Config.Out
	// changed wakes the pusher (capacity 1: changes coalesce).
	changed chan struct{}

	mu    sync.Mutex
	state string
	phase string
	// counts are the hunt's counts so far (hunt.Progress).
	candidates, storyRuns int
	phaseRuns             map[string]int
	lines                 []string
	// playing names the story run being played; sc and events are its
	// scenario and history so far.
	playing string
	sc      *scenarios.Scenario
	events  []history.Event
	// verdicts are the last story runs' verdicts, newest last.
	verdicts []checker.Verdict
	result   *huntResult
	err      string
}

// huntResult is the end of a hunt as the page shows it.
type huntResult struct {
	Found   bool     `json:"found"`
	Summary string   `json:"summary"`
	Counts  string   `json:"counts"`
	Notes   []string `json:"notes,omitempty"`
	// Sides are the found story and the hand-written one, in that order.
	Sides []storySide `json:"sides,omitempty"`
	Links []link      `json:"links"`
}

// storySide is one story of the side by side: its steps, the verdict
// and timeline of its run, and its files.
type storySide struct {
	Heading  string          `json:"heading"`
	Story    storyView       `json:"story"`
	Verdict  checker.Verdict `json:"verdict,omitempty"`
	Summary  string          `json:"summary,omitempty"`
	Timeline string          `json:"timeline,omitempty"`
	YAML     string          `json:"yaml,omitempty"`
	Links    []link          `json:"links"`
	Error    string          `json:"error,omitempty"`
}

// huntSnapshot is the hunt as the live stream sends it.
type huntSnapshot struct {
	Preset     string            `json:"preset"`
	State      string            `json:"state"`
	Phase      string            `json:"phase"`
	Candidates int               `json:"candidates"`
	StoryRuns  int               `json:"story_runs"`
	PhaseRuns  map[string]int    `json:"phase_runs"`
	Lines      []string          `json:"lines"`
	Playing    string            `json:"playing,omitempty"`
	Timeline   string            `json:"timeline,omitempty"`
	Verdicts   []checker.Verdict `json:"verdicts"`
	Result     *huntResult       `json:"result,omitempty"`
	Error      string            `json:"error,omitempty"`
}

func (h *liveHunt) touch() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

func (h *liveHunt) ended() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == StateDone || h.state == StateFailed || h.state == StateStopped
}

// say takes a line of the hunt's progress (hunt.Options.Say).
func (h *liveHunt) say(format string, args ...any) {
	h.mu.Lock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
	if n := len(h.lines); n > 200 {
		h.lines = append([]string(nil), h.lines[n-200:]...)
	}
	h.mu.Unlock()
	h.touch()
}

// record is the runner's Recorded hook for every story the hunt plays: a
// new run (another scenario, or the history starting again) replaces
// the events drawn.
func (h *liveHunt) record(sc *scenarios.Scenario, e history.Event) {
	h.mu.Lock()
	if sc != h.sc || (len(h.events) > 0 && e.Seq <= h.events[len(h.events)-1].Seq) {
		h.sc, h.events = sc, nil
		h.playing = fmt.Sprintf("story run %d (%s)", h.storyRuns+1, sc.Name)
	}
	h.events = append(h.events, e)
	h.mu.Unlock()
	h.touch()
}

// progress takes a story run's end (hunt.Options.Progress).
func (h *liveHunt) progress(p hunt.Progress) {
	h.mu.Lock()
	h.phase, h.candidates, h.storyRuns = string(p.Phase), p.Candidates, p.StoryRuns
	h.phaseRuns[string(p.Phase)] = p.PhaseRuns
	h.verdicts = append(h.verdicts, p.Played.Verdict)
	if n := len(h.verdicts); n > 80 {
		h.verdicts = append([]checker.Verdict(nil), h.verdicts[n-80:]...)
	}
	h.mu.Unlock()
	h.touch()
}

func (h *liveHunt) snapshot() *huntSnapshot {
	h.mu.Lock()
	snap := &huntSnapshot{Preset: h.preset.ID, State: h.state, Phase: h.phase, Candidates: h.candidates, StoryRuns: h.storyRuns,
		PhaseRuns: map[string]int{}, Lines: append([]string(nil), h.lines...), Playing: h.playing,
		Verdicts: append([]checker.Verdict(nil), h.verdicts...), Result: h.result, Error: h.err}
	for k, v := range h.phaseRuns {
		snap.PhaseRuns[k] = v
	}
	sc, events := h.sc, append([]history.Event(nil), h.events...)
	h.mu.Unlock()
	if sc != nil && len(events) > 0 && snap.Result == nil {
		snap.Timeline = liveSVG(snap.Playing, events, sc)
	}
	return snap
}

func (s *Server) handleHunts(w http.ResponseWriter, _ *http.Request) {
	type view struct {
		HuntPreset
		Command string `json:"command"`
	}
	var out []view
	for _, p := range huntPresets {
		out = append(out, view{p, p.Command()})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleHunt starts a preset hunt: {"preset": "redlock"}.
func (s *Server) handleHunt(w http.ResponseWriter, req *http.Request) {
	startPreset(w, req, "hunt", huntPresets, func(p HuntPreset) string { return p.ID }, s.startHunt)
}

// startHunt starts the preset p, unless a run is in progress.
func (s *Server) startHunt(p HuntPreset) error {
	sp, err := hunt.NewSpace(p.Lock, p.Storage, p.Faults, p.TTL, p.Clients)
	if err != nil || s.stories[p.Story] == nil {
		return fmt.Errorf("the hunt preset %s is broken: %v (story %q)", p.ID, err, p.Story)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the server is stopping")
	}
	if b := s.busy(); b != "" {
		return fmt.Errorf("%w: %s; stop it first", errBusy, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dir := fmt.Sprintf("hunt-%s-%s", p.Lock, time.Now().Format("20060102-150405.000"))
	h := &liveHunt{preset: p, cancel: cancel, dir: dir, state: StateRunning, changed: make(chan struct{}, 1), phaseRuns: map[string]int{}}
	s.hunt = h
	s.dirs[dir] = true
	s.runs.Add(2)
	done := make(chan struct{})
	fmt.Fprintf(s.cfg.Log, "sim workshop: the hunt %s into %s\n", p.ID, filepath.Join(s.cfg.Out, dir))
	go func() {
		defer s.runs.Done()
		defer close(done)
		defer cancel()
		res, err := s.playHunt(ctx, h, sp)
		h.mu.Lock()
		h.result, h.playing, h.sc, h.events = res, "", nil, nil
		h.state, h.err = ending(ctx, err, "hunt")
		h.mu.Unlock()
		fmt.Fprintf(s.cfg.Log, "sim workshop: the hunt %s: %s\n", p.ID, h.state)
	}()
	go func() {
		defer s.runs.Done()
		s.pushEach(h.changed, done)
	}()
	return nil
}

// playHunt plays the hunt as sim hunt does, into Config.Out/h.dir:
// hunt.json, found.yaml and original.yaml; then the found story (run/)
// and the hand-written one (handwritten/), each played once, for the
// side by side.
func (s *Server) playHunt(ctx context.Context, h *liveHunt, sp hunt.Space) (*huntResult, error) {
	p := h.preset
	root := filepath.Join(s.cfg.Out, h.dir)
	d, err := outdir.Claim(root, outdir.Hunt, fmt.Sprintf("sim workshop: sim hunt %s seed %d", p.Lock, p.Seed))
	if err != nil {
		return nil, err
	}
	cands, err := d.Sub("candidates", outdir.Runs, "sim workshop: sim hunt")
	if err != nil {
		return nil, err
	}
	defer outdir.RemoveAll(cands.Path())
	base := runner.Options{Seed: p.Seed, Host: s.cfg.Host, Recorded: h.record}
	play, closeServers := hunt.OnServers(cands.Path(), base)
	defer closeServers()
	h.say("%s", p.Command())
	res, found, original, err := hunt.Run(ctx, hunt.Options{Space: sp, Runs: p.Runs, Budget: p.Budget, ShrinkRuns: p.ShrinkRuns,
		Seed: p.Seed, Play: play, Say: h.say, Progress: h.progress})
	closeServers() // the stories are replayed on servers of their own
	file, werr := hunt.WriteDir(d, res, found, original)
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	href := "/runs/" + h.dir + "/"
	out := &huntResult{Found: res.Found, Links: []link{{"hunt.json", href + "hunt.json"}},
		Counts: res.Counts()}
	if !res.Found {
		out.Summary = "nothing found in " + res.Runs()
		return out, nil
	}
	out.Summary, out.Notes = res.Summary, res.Thresholds
	if n := res.NotReproduced(); n != "" {
		out.Notes = append(out.Notes, n)
	}
	out.Links = append(out.Links, link{"found.yaml", href + "found.yaml"}, link{"original.yaml", href + "original.yaml"})
	sc, err := scenarios.Find(file)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.phase = "replay"
	h.mu.Unlock()
	foundSide := s.playSide(ctx, "Found by sim hunt", sc, filepath.Join(root, "run"), href+"run/", p.Seed, h)
	foundSide.YAML = string(found.YAML)
	handSide := s.playSide(ctx, "Written by hand (the catalogue's)", s.stories[p.Story], filepath.Join(root, "handwritten"), href+"handwritten/", p.Seed, h)
	out.Sides = []storySide{foundSide, handSide}
	return out, ctx.Err()
}

// playSide plays story sc once into dir, drawn live as it records, and
// makes it one side of the side by side.
func (s *Server) playSide(ctx context.Context, heading string, sc *scenarios.Scenario, dir, href string, seed int64, h *liveHunt) storySide {
	side := storySide{Heading: heading, Story: newStoryView(sc)}
	if ctx.Err() != nil {
		return side
	}
	h.mu.Lock()
	h.playing, h.sc, h.events = sc.Name, sc, nil
	h.mu.Unlock()
	out, err := s.cfg.Play(ctx, sc, runner.Options{Out: dir, Seed: seed, Host: s.cfg.Host, Recorded: h.record})
	if err != nil {
		side.Error = err.Error()
	}
	if out == nil {
		return side
	}
	c := out.Check
	side.Verdict, side.Summary = c.Verdict, c.Summary
	side.Timeline = reports.NewTimeline(sc.Name+": "+sc.Title, out.Events, c, reports.LockNodes(sc), sc.Clients).SVG()
	side.Links = []link{{"report.html", href + "report.html"}, {"history.html", href + "history.html"}}
	return side
}

// ending is the state a sweep's or a hunt's goroutine ends in, and why
// when it did not end done.
func ending(ctx context.Context, err error, what string) (state, why string) {
	switch {
	case ctx.Err() != nil:
		return StateStopped, "every server and client of the " + what + " was stopped"
	case err != nil:
		return StateFailed, err.Error()
	}
	return StateDone, ""
}

// pushEach tells the pages each time changed fires (at most every
// minPush), and once at done.
func (s *Server) pushEach(changed <-chan struct{}, done <-chan struct{}) {
	var last time.Time
	for {
		select {
		case <-changed:
			if d := minPush - time.Since(last); d > 0 {
				select {
				case <-time.After(d):
				case <-done:
					s.broadcast()
					return
				}
			}
			last = time.Now()
			s.broadcast()
		case <-done:
			s.broadcast()
			return
		}
	}
}
