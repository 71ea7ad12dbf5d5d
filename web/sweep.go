package web

// sweep.go: the sweep page's run. A sweep is one of a few presets (the
// page names a preset, never a scenario file or a parameter), played by
// sweep.Run with its Row hook: each point appears on the plots, drawn by
// the code of sim sweep's plots (reports.SweepPlots, RatePlotSVG), as
// its trials finish. It counts as the one run at a time.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/locksim/locksim/reports"
	"github.com/locksim/locksim/sweep"
)

// SweepPreset is a sweep the page can start.
type SweepPreset struct {
	// ID names it in a request.
	ID string `json:"id"`
	// Title and About say what it shows.
	Title string `json:"title"`
	About string `json:"about"`
	// Scenario is the generator scenario swept; Param, Points, Trials,
	// Locks, TTL and Duration are as sim sweep's flags.
	Scenario string        `json:"scenario"`
	Param    string        `json:"param"`
	Points   int           `json:"points"`
	Trials   int           `json:"trials"`
	Locks    []string      `json:"locks"`
	TTL      time.Duration `json:"ttl_ns"`
	Duration time.Duration `json:"duration_ns"`
}

// sweepPresets are the sweeps the page offers: the README's debate chart,
// smaller, so that it runs in front of a room in well under a minute.
var sweepPresets = []SweepPreset{{
	ID:    "pause",
	Title: "A pause against the TTL, lock by lock",
	About: "gen-pause: clients loop acquire, read-modify-write, release while one of them is paused (SIGSTOP); " +
		"the pause grows from 0.2 to 3 times the TTL. Single Redis and Redlock lose updates once the pause outlasts the TTL; " +
		"the fenced variant does not. The README's debate chart, with fewer points and trials.",
	Scenario: "gen-pause", Param: "pause=0.2ttl..3ttl", Points: 5, Trials: 6,
	Locks: []string{"redis", "redlock", "redis+fenced"}, TTL: 50 * time.Millisecond, Duration: 60 * time.Millisecond,
}}

// liveSweep is a sweep started from the page.
type liveSweep struct {
	preset SweepPreset
	cancel context.CancelFunc

	mu    sync.Mutex
	state string
	rows  []sweep.Row
	err   string
	// last is the last snapshot drawn, kept until a row or the state
	// changes (the plots take a few milliseconds to draw).
	last *sweepSnapshot
}

// sweepSnapshot is the sweep as the live stream sends it.
type sweepSnapshot struct {
	Preset string     `json:"preset"`
	State  string     `json:"state"`
	Rows   []sweepRow `json:"rows"`
	Total  int        `json:"total"` // rows when done
	Plots  []string   `json:"plots"` // SVG: damage, then violations
	Error  string     `json:"error,omitempty"`
}

type sweepRow struct {
	Lock     string `json:"lock"`
	Value    string `json:"value"`
	Trials   int    `json:"trials"`
	Unknown  int    `json:"unknown"`
	Damaged  int    `json:"damaged"`
	Violated int    `json:"violated"`
}

func (w *liveSweep) ended() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == StateDone || w.state == StateFailed || w.state == StateStopped
}

func (w *liveSweep) snapshot() *sweepSnapshot {
	w.mu.Lock()
	if l := w.last; l != nil && l.State == w.state && len(l.Rows) == len(w.rows) {
		w.mu.Unlock()
		return l
	}
	rows := append([]sweep.Row(nil), w.rows...)
	snap := &sweepSnapshot{Preset: w.preset.ID, State: w.state, Error: w.err, Total: w.preset.Points * len(w.preset.Locks)}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.last = snap
		w.mu.Unlock()
	}()
	for _, r := range rows {
		snap.Rows = append(snap.Rows, sweepRow{Lock: r.Lock, Value: r.Value.Format(r.Param), Trials: r.Trials, Unknown: r.Unknown, Damaged: r.Damaged, Violated: r.Violated})
	}
	if len(rows) > 0 {
		for _, p := range reports.SweepPlots(w.preset.Scenario, rows, reports.XPlanned) {
			if svg, err := reports.RatePlotSVG(p.RatePlot); err == nil {
				snap.Plots = append(snap.Plots, string(svg))
			}
		}
	}
	return snap
}

func (s *Server) handleSweeps(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, sweepPresets)
}

// handleSweep starts a preset sweep: {"preset": "pause"}.
func (s *Server) handleSweep(w http.ResponseWriter, req *http.Request) {
	startPreset(w, req, "sweep", sweepPresets, func(p SweepPreset) string { return p.ID }, s.startSweep)
}

// busy says what is in progress ("": nothing); s.mu is held.
func (s *Server) busy() string {
	if c := s.cur; c != nil && !c.ended() {
		return fmt.Sprintf("%s (%s)", c.sc.Name, c.mode)
	}
	if w := s.sweep; w != nil && !w.ended() {
		return "the sweep " + w.preset.ID
	}
	if h := s.hunt; h != nil && !h.ended() {
		return "the hunt " + h.preset.ID
	}
	if c := s.cost; c != nil && !c.ended() {
		return "the cost run " + c.preset.ID
	}
	return ""
}

// startSweep starts the preset p, unless a run is in progress.
func (s *Server) startSweep(p SweepPreset) error {
	sc := s.stories[p.Scenario]
	param, err := sweep.ParseParam(p.Param)
	if sc == nil || err != nil {
		return fmt.Errorf("the preset %s is broken: %v", p.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("the server is stopping")
	}
	if b := s.busy(); b != "" {
		return fmt.Errorf("%w: %s; stop it first", errBusy, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lw := &liveSweep{preset: p, cancel: cancel, state: StateRunning}
	s.sweep = lw
	changed := make(chan struct{}, 1)
	touch := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	s.runs.Add(2)
	done := make(chan struct{})
	fmt.Fprintf(s.cfg.Log, "sim workshop: the sweep %s\n", p.ID)
	go func() {
		defer s.runs.Done()
		defer close(done)
		defer cancel()
		_, err := sweep.Run(ctx, sc, sweep.Options{Param: &param, Points: p.Points, Trials: p.Trials, Locks: p.Locks,
			Seed: time.Now().UnixNano(), TTL: p.TTL, Duration: p.Duration, Host: s.cfg.Host,
			Row: func(r sweep.Row) {
				lw.mu.Lock()
				lw.rows = append(lw.rows, r)
				lw.mu.Unlock()
				touch()
			}})
		lw.mu.Lock()
		lw.state, lw.err = ending(ctx, err, "sweep")
		lw.mu.Unlock()
		fmt.Fprintf(s.cfg.Log, "sim workshop: the sweep %s: %s\n", p.ID, lw.state)
	}()
	go func() {
		defer s.runs.Done()
		s.pushEach(changed, done)
	}()
	return nil
}
