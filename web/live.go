package web

// live.go: the one run at a time. A run is played by Config.Play with
// the runner's hooks: each event recorded marks the run changed, and a
// pusher draws the timeline from the events so far (reports.NewTimeline,
// as report.html's) and sends it to every page through server-sent
// events. Step mode waits before each step for the presenter, and goes on
// by itself reports.StepMargin before a lease would run out, as sim run
// --step does.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

// Modes of a run, as the page's buttons start them.
const (
	ModeRun            = "run"
	ModeStep           = "step"
	ModeCounterfactual = "counterfactual"
)

// States of a run.
const (
	StateRunning = "running"
	StateWaiting = "waiting" // step mode: waiting for the presenter
	StateDone    = "done"
	StateFailed  = "failed" // the harness failed: no verdict
	StateStopped = "stopped"
)

// PushEvery is the longest the page waits for a fresh timeline while a
// run records events; a burst of events is drawn once, at most every
// minPush.
const (
	PushEvery = 250 * time.Millisecond
	minPush   = 40 * time.Millisecond
)

// liveRun is a run started from the page.
type liveRun struct {
	id     int
	sc     *scenarios.Scenario
	mode   string
	dir    string // its name in Config.Out
	cancel context.CancelFunc
	// next hands the waiting step on (POST /api/next): made for each
	// waiting step, under mu with the state, and dropped once it is
	// pressed or the step goes on, so a press is never kept for a later
	// step and never refused while the page shows a step waiting.
	next chan struct{}
	// changed wakes the pusher (capacity 1: changes coalesce).
	changed chan struct{}

	mu       sync.Mutex
	state    string
	events   []history.Event
	cfEvents []history.Event
	step     *stepView
	steps    int // steps begun
	narr     []string
	result   *resultView
	err      string
	// recorded is when each event of the story (not the
	// counterfactual) was recorded, by Seq; pushed is when the page was
	// first sent a timeline holding it. Their difference is the
	// latency TestWorkshopLive reports.
	recorded map[int64]time.Time
	pushed   map[int64]time.Time
	// final holds the final timelines, drawn once with the check.
	final, cfFinal string
}

// stepView is the step the story is at.
type stepView struct {
	Index int      `json:"index"`
	Count int      `json:"count"`
	Say   string   `json:"say,omitempty"`
	Do    string   `json:"do"`
	State []string `json:"state"`
	// Waiting says the step waits for the presenter; AutoMS is how long
	// until it goes on by itself (0 with AutoWhat empty: it waits for
	// ever), AutoWhat what would run out.
	Waiting  bool   `json:"waiting"`
	AutoMS   int64  `json:"auto_ms,omitempty"`
	AutoWhat string `json:"auto_what,omitempty"`
}

// resultView is the end of a run as the page shows it.
type resultView struct {
	Verdict  checker.Verdict `json:"verdict"`
	Expected checker.Verdict `json:"expected"`
	Matches  bool            `json:"matches"`
	Summary  string          `json:"summary"`
	Evidence []evidence      `json:"evidence"`
	CF       *cfView         `json:"counterfactual,omitempty"`
	Links    []link          `json:"links"`
	Duration time.Duration   `json:"duration_ns"`
}

type evidence struct {
	Kind     string   `json:"kind"`
	Sentence string   `json:"sentence"`
	Bad      bool     `json:"bad"`
	Events   []string `json:"events"`
}

type cfView struct {
	Change   string          `json:"change"`
	Verdict  checker.Verdict `json:"verdict"`
	Expected checker.Verdict `json:"expected"`
	Flipped  bool            `json:"flipped"`
	Summary  string          `json:"summary"`
	Sentence string          `json:"sentence"`
}

type link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

// runMessage is what the live stream sends: the run, and the verdicts of
// the session so far.
type runMessage struct {
	Run      *runSnapshot               `json:"run"`
	Sweep    *sweepSnapshot             `json:"sweep,omitempty"`
	Hunt     *huntSnapshot              `json:"hunt,omitempty"`
	Cost     *costSnapshot              `json:"cost,omitempty"`
	Verdicts map[string]checker.Verdict `json:"verdicts"`
}

type runSnapshot struct {
	ID         int         `json:"id"`
	Story      string      `json:"story"`
	Mode       string      `json:"mode"`
	State      string      `json:"state"`
	Events     int         `json:"events"`
	CFEvents   int         `json:"cf_events"`
	Steps      int         `json:"steps"`
	Timeline   string      `json:"timeline"`
	CFTimeline string      `json:"cf_timeline,omitempty"`
	Step       *stepView   `json:"step,omitempty"`
	Narration  []string    `json:"narration"`
	Result     *resultView `json:"result,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// touch wakes the pusher.
func (r *liveRun) touch() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// record is the runner's Recorded hook.
func (r *liveRun) record(sc *scenarios.Scenario, e history.Event) {
	r.mu.Lock()
	if sc.IsCounterfactual {
		r.cfEvents = append(r.cfEvents, e)
	} else {
		r.events = append(r.events, e)
		r.recorded[e.Seq] = time.Now()
	}
	r.mu.Unlock()
	r.touch()
}

// Write takes the run's narration (runner.Options.Log), line by line;
// the page keeps the last lines.
func (r *liveRun) Write(p []byte) (int, error) {
	r.mu.Lock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			r.narr = append(r.narr, line)
		}
	}
	if n := len(r.narr); n > 40 {
		r.narr = append([]string(nil), r.narr[n-40:]...)
	}
	r.mu.Unlock()
	r.touch()
	return len(p), nil
}

// beforeStep shows step v and, in step mode, waits for the presenter
// (runner.Options.BeforeStep).
func (r *liveRun) beforeStep(ctx context.Context, v runner.StepView) {
	nodes := reports.LockNodes(v.Scenario)
	st := &stepView{Index: v.Index, Count: len(v.Scenario.Steps), Say: v.Step.Say, Do: v.Step.Describe(),
		State: reports.StateAt(v.Events, nodes, v.Scenario.Clients, v.Now)}
	var timeout <-chan time.Time
	if r.mode == ModeStep {
		st.Waiting = true
		if left, what, ok := reports.StepWait(v.Events, nodes, v.Now); ok {
			st.AutoMS, st.AutoWhat = max(left.Milliseconds(), 1), what
			timeout = time.After(left)
		}
	}
	next := make(chan struct{}, 1)
	r.mu.Lock()
	r.step, r.steps = st, r.steps+1
	if st.Waiting {
		r.state, r.next = StateWaiting, next
	}
	r.mu.Unlock()
	r.touch()
	if !st.Waiting {
		return
	}
	select {
	case <-next:
	case <-timeout:
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.state, st.Waiting, r.next = StateRunning, false, nil
	r.mu.Unlock()
	r.touch()
}

// pressNext hands the waiting step on; false when no step waits or it
// was pressed already.
func (r *liveRun) pressNext() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		return false
	}
	r.next <- struct{}{} // capacity 1, and r.next is dropped at once
	r.next = nil
	return true
}

// afterStep redraws once a step is carried out.
func (r *liveRun) afterStep(context.Context, runner.StepView) { r.touch() }

// snapshot draws the run as it is now.
func (r *liveRun) snapshot() *runSnapshot {
	r.mu.Lock()
	events := append([]history.Event(nil), r.events...)
	cf := append([]history.Event(nil), r.cfEvents...)
	snap := &runSnapshot{ID: r.id, Story: r.sc.Name, Mode: r.mode, State: r.state, Events: len(events), CFEvents: len(cf),
		Steps: r.steps, Narration: append([]string(nil), r.narr...), Result: r.result, Error: r.err}
	if r.step != nil {
		s := *r.step
		snap.Step = &s
	}
	final, cfFinal := r.final, r.cfFinal
	r.mu.Unlock()
	title := r.sc.Name + ": " + r.sc.Title
	snap.Timeline = final
	if final == "" {
		snap.Timeline = liveSVG(title, events, r.sc)
	}
	snap.CFTimeline = cfFinal
	if cfFinal == "" && len(cf) > 0 {
		snap.CFTimeline = liveSVG(title+" (counterfactual)", cf, r.sc)
	}
	return snap
}

// liveSVG draws the timeline of the events so far, unchecked (the holds
// derived from the history), with report.html's code.
func liveSVG(title string, events []history.Event, sc *scenarios.Scenario) string {
	return reports.NewTimeline(title, events, checker.Result{}, reports.LockNodes(sc), sc.Clients).SVG()
}

// finish records the run's end: its verdict and evidence, or why it has
// none, and the final timelines drawn with the check, as the report's.
func (r *liveRun) finish(out *runner.Outcome, err error, stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step = nil
	switch {
	case stopped:
		r.state, r.err = StateStopped, "every server and client of the run was stopped"
		return
	case err != nil:
		r.state, r.err = StateFailed, err.Error()
		if out == nil {
			return
		}
	default:
		r.state = StateDone
	}
	c := out.Check
	res := &resultView{Verdict: c.Verdict, Expected: out.Expected, Matches: out.Matches(), Summary: c.Summary, Duration: out.Duration}
	for _, f := range c.Findings() {
		ev := evidence{Kind: f.Kind, Sentence: f.Sentence, Bad: f.Bad}
		for _, e := range f.Events {
			if e.Seq != 0 {
				ev.Events = append(ev.Events, reports.EventLine(e))
			}
		}
		res.Evidence = append(res.Evidence, ev)
	}
	base := "/runs/" + r.dir + "/"
	res.Links = []link{{"report.html", base + "report.html"}, {"history.html", base + "history.html"}}
	r.final = reports.NewTimeline(out.Scenario.Name+": "+out.Scenario.Title, out.Events, c, reports.LockNodes(out.Scenario), out.Scenario.Clients).SVG()
	if cf := out.Counterfactual; cf != nil {
		res.CF = &cfView{Change: cf.Change, Verdict: cf.Verdict, Expected: cf.Expected, Flipped: cf.Flipped, Summary: cf.Summary, Sentence: cf.Sentence()}
		res.Links = append(res.Links, link{"counterfactual/report.html", base + "counterfactual/report.html"},
			link{"counterfactual/history.html", base + "counterfactual/history.html"})
		if cr := cf.Run; cr != nil && cr.Interrupted == "" {
			r.cfFinal = reports.NewTimeline(out.Scenario.Name+": "+out.Scenario.Title+" (counterfactual)", cr.Events, cr.Check, reports.LockNodes(cr.Scenario), cr.Scenario.Clients).SVG()
		}
	}
	r.result = res
}

// runRequest is POST /api/run's body.
type runRequest struct {
	// Story is a catalogue story's name: never a path.
	Story string `json:"story"`
	// Mode is run, step or counterfactual.
	Mode string `json:"mode"`
}

func (s *Server) handleRun(w http.ResponseWriter, req *http.Request) {
	var rr runRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 4096)).Decode(&rr); err != nil {
		refuse(w, http.StatusBadRequest, "bad request: %v", err)
		return
	}
	sc := s.stories[rr.Story]
	switch {
	case sc == nil:
		refuse(w, http.StatusNotFound, "no story named %q in the catalogue (the page starts catalogue stories by name only)", rr.Story)
		return
	case sc.Generator != nil:
		refuse(w, http.StatusBadRequest, "%s is a generator scenario: sim sweep and sim run play it, the page plays scripted stories", sc.Name)
		return
	case rr.Mode != ModeRun && rr.Mode != ModeStep && rr.Mode != ModeCounterfactual:
		refuse(w, http.StatusBadRequest, "mode: expected run, step or counterfactual, got %q", rr.Mode)
		return
	case rr.Mode == ModeCounterfactual && sc.Counterfactual == nil:
		refuse(w, http.StatusBadRequest, "%s has no counterfactual", sc.Name)
		return
	}
	r, err := s.start(sc, rr.Mode)
	if err != nil {
		refuse(w, http.StatusConflict, "%v", err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": r.id, "story": sc.Name, "mode": r.mode})
}

// errBusy refuses a second run while one is in progress.
var errBusy = errors.New("a run is in progress")

// start starts a run of sc, unless one is in progress.
func (s *Server) start(sc *scenarios.Scenario, mode string) (*liveRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the server is stopping")
	}
	if b := s.busy(); b != "" {
		return nil, fmt.Errorf("%w: %s; stop it first", errBusy, b)
	}
	s.nextID++
	ctx, cancel := context.WithCancel(context.Background())
	dir := filepath.Base(runner.DefaultOut(sc.Name, time.Now()))
	r := &liveRun{id: s.nextID, sc: sc, mode: mode, dir: dir, cancel: cancel, state: StateRunning,
		changed:  make(chan struct{}, 1),
		recorded: map[int64]time.Time{}, pushed: map[int64]time.Time{}}
	s.cur = r
	s.dirs[dir] = true
	s.runs.Add(2)
	fmt.Fprintf(s.cfg.Log, "sim workshop: %s (%s) into %s\n", sc.Name, mode, filepath.Join(s.cfg.Out, dir))
	done := make(chan struct{})
	go func() {
		defer s.runs.Done()
		defer close(done)
		defer cancel()
		o := runner.Options{Out: filepath.Join(s.cfg.Out, dir), Seed: time.Now().UnixNano(), Log: r, Host: s.cfg.Host,
			BeforeStep: r.beforeStep, AfterStep: r.afterStep, Recorded: r.record, Counterfactual: mode == ModeCounterfactual}
		out, err := s.cfg.Play(ctx, sc, o)
		stopped := ctx.Err() != nil
		r.finish(out, err, stopped)
		s.mu.Lock()
		if out != nil && err == nil {
			s.verdicts[sc.Name] = out.Check.Verdict
		}
		s.mu.Unlock()
		verdict := r.snapshotState()
		fmt.Fprintf(s.cfg.Log, "sim workshop: %s: %s\n", sc.Name, verdict)
	}()
	go func() {
		defer s.runs.Done()
		s.pusher(r, done)
	}()
	return r, nil
}

// snapshotState says how a run ended, in a few words.
func (r *liveRun) snapshotState() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.result != nil {
		return r.state + ", verdict " + string(r.result.Verdict)
	}
	return r.state + ": " + r.err
}

// ended says the run is over.
func (r *liveRun) ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == StateDone || r.state == StateFailed || r.state == StateStopped
}

// pusher tells the pages about r: when it changes (at most every
// minPush), every PushEvery while it runs, and once at its end.
func (s *Server) pusher(r *liveRun, done <-chan struct{}) {
	tick := time.NewTicker(PushEvery)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-done:
			s.broadcast()
			return
		case <-r.changed:
			if d := minPush - time.Since(last); d > 0 {
				select {
				case <-time.After(d):
				case <-done:
					s.broadcast()
					return
				}
			}
		case <-tick.C:
		}
		last = time.Now()
		s.broadcast()
	}
}

// broadcast wakes every live stream: each draws the current run.
func (s *Server) broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// message is the live stream's message now.
func (s *Server) message() runMessage {
	s.mu.Lock()
	r, sw, h, c := s.cur, s.sweep, s.hunt, s.cost
	verdicts := make(map[string]checker.Verdict, len(s.verdicts))
	for k, v := range s.verdicts {
		verdicts[k] = v
	}
	s.mu.Unlock()
	m := runMessage{Verdicts: verdicts}
	if sw != nil {
		m.Sweep = sw.snapshot()
	}
	if h != nil {
		m.Hunt = h.snapshot()
	}
	if c != nil {
		m.Cost = c.snapshot()
	}
	if r != nil {
		m.Run = r.snapshot()
		r.mu.Lock()
		now := time.Now()
		for seq := range r.recorded {
			if _, ok := r.pushed[seq]; !ok && seq <= int64(m.Run.Events) {
				r.pushed[seq] = now
			}
		}
		r.mu.Unlock()
	}
	return m
}

// handleLive is the live stream (server-sent events): a message at once,
// then one each time the run changes, until the page goes or the server
// stops.
func (s *Server) handleLive(w http.ResponseWriter, req *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[wake] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, wake)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	wake <- struct{}{}
	for {
		select {
		case <-wake:
			b, err := json.Marshal(s.message())
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		case <-req.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

func (s *Server) handleNext(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	r := s.cur
	s.mu.Unlock()
	if r == nil {
		refuse(w, http.StatusConflict, "no run")
		return
	}
	if !r.pressNext() {
		refuse(w, http.StatusConflict, "no step is waiting")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (s *Server) handleStop(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	r, sw, h, c := s.cur, s.sweep, s.hunt, s.cost
	s.mu.Unlock()
	switch {
	case r != nil && !r.ended():
		r.cancel()
	case sw != nil && !sw.ended():
		sw.cancel()
	case h != nil && !h.ended():
		h.cancel()
	case c != nil && !c.ended():
		c.cancel()
	default:
		refuse(w, http.StatusConflict, "no run in progress")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}
