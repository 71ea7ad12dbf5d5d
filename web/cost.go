package web

// cost.go: the cost view's run. A cost run is one of a few presets (the
// page names a preset, never a lock or a flag), measured by cost.Run on
// real servers as sim cost measures them, with short points; its
// progress goes to the page point by point, and at its end the page
// shows cost.png and the table, written into a run directory as sim cost
// writes them (reports.WriteCost). It counts as the one run at a time.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/cost"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/reports"
)

// CostPreset is a cost run the page can start.
type CostPreset struct {
	// ID names it in a request.
	ID string `json:"id"`
	// Title and About say what it shows.
	Title string `json:"title"`
	About string `json:"about"`
	// Locks and Duration are as sim cost's --locks and --duration.
	Locks    []string      `json:"locks"`
	Duration time.Duration `json:"duration_ns"`
}

// Command is the preset as a sim cost command line.
func (p CostPreset) Command() string {
	return fmt.Sprintf("sim cost --locks %s --duration %v", strings.Join(p.Locks, ","), p.Duration)
}

// costPresets are the cost runs the page offers: the debate's locks,
// with points short enough to measure in front of a room in well under
// a minute.
var costPresets = []CostPreset{{
	ID:    "debate",
	Title: "What each lock costs, beside the faults it survives",
	About: "sim cost on real servers on this machine: one Redis node, Redlock on five with persistence none, everysec and always " +
		"(appendfsync), and a PostgreSQL session lock, direct and through pgbouncer. Each point runs 300 ms: " +
		"the figures are rougher than docs/cost.md's 2 s runs, the order of the locks is what to read.",
	Locks: []string{"redis", "redlock", "postgres-session"}, Duration: 300 * time.Millisecond,
}}

// liveCost is a cost run started from the page.
type liveCost struct {
	preset CostPreset
	cancel context.CancelFunc
	dir    string // its name in Config.Out
	// changed wakes the pusher (capacity 1: changes coalesce).
	changed chan struct{}

	mu    sync.Mutex
	state string
	// done of total points measured; what the last one was.
	done, total int
	what        string
	result      *costResult
	err         string
}

// costResult is the end of a cost run as the page shows it.
type costResult struct {
	// Chart is cost.png's address; Table sim cost's table of the run.
	Chart string `json:"chart"`
	Table string `json:"table"`
	// Command and Took say how it was measured.
	Command string  `json:"command"`
	Took    float64 `json:"took_s"`
	Links   []link  `json:"links"`
	// Failed names the points that could not be measured.
	Failed string `json:"failed,omitempty"`
}

// costSnapshot is the cost run as the live stream sends it.
type costSnapshot struct {
	Preset string      `json:"preset"`
	State  string      `json:"state"`
	Done   int         `json:"done"`
	Total  int         `json:"total"`
	What   string      `json:"what"`
	Result *costResult `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

func (c *liveCost) touch() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *liveCost) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == StateDone || c.state == StateFailed || c.state == StateStopped
}

func (c *liveCost) snapshot() *costSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &costSnapshot{Preset: c.preset.ID, State: c.state, Done: c.done, Total: c.total, What: c.what, Result: c.result, Error: c.err}
}

func (s *Server) handleCosts(w http.ResponseWriter, _ *http.Request) {
	type view struct {
		CostPreset
		Command string `json:"command"`
	}
	var out []view
	for _, p := range costPresets {
		out = append(out, view{p, p.Command()})
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCost starts a preset cost run: {"preset": "debate"}.
func (s *Server) handleCost(w http.ResponseWriter, req *http.Request) {
	startPreset(w, req, "cost", costPresets, func(p CostPreset) string { return p.ID }, s.startCost)
}

// startCost starts the preset p, unless a run is in progress.
func (s *Server) startCost(p CostPreset) error {
	opts, err := cost.OptionsOf(p.Locks)
	if err != nil {
		return fmt.Errorf("the cost preset %s is broken: %v", p.ID, err)
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
	dir := "cost-" + time.Now().Format("20060102-150405.000")
	c := &liveCost{preset: p, cancel: cancel, dir: dir, state: StateRunning, changed: make(chan struct{}, 1), total: cost.Points(opts)}
	s.cost = c
	s.dirs[dir] = true
	s.runs.Add(2)
	done := make(chan struct{})
	fmt.Fprintf(s.cfg.Log, "sim workshop: the cost run %s into %s\n", p.ID, filepath.Join(s.cfg.Out, dir))
	go func() {
		defer s.runs.Done()
		defer close(done)
		defer cancel()
		res, err := s.playCost(ctx, c, opts)
		c.mu.Lock()
		c.result = res
		c.state, c.err = ending(ctx, err, "cost run")
		c.mu.Unlock()
		fmt.Fprintf(s.cfg.Log, "sim workshop: the cost run %s: %s\n", p.ID, c.state)
	}()
	go func() {
		defer s.runs.Done()
		s.pushEach(c.changed, done)
	}()
	return nil
}

// playCost measures the preset as sim cost does, the chart's marks the
// catalogue's verdicts, and writes cost.csv, cost.json and cost.png into
// Config.Out/c.dir.
func (s *Server) playCost(ctx context.Context, c *liveCost, opts []cost.Option) (*costResult, error) {
	p := c.preset
	marks, err := cost.CatalogueMarks(opts)
	if err != nil {
		return nil, err
	}
	res, err := cost.Run(ctx, cost.Options{Locks: p.Locks, Duration: p.Duration, Progress: func(done, total int, what string) {
		c.mu.Lock()
		c.done, c.total, c.what = done, total, what
		c.mu.Unlock()
		c.touch()
	}})
	if err != nil {
		return nil, err
	}
	res.Command, res.Verdicts, res.Marks = p.Command(), cost.FromCatalogue, marks
	d, err := outdir.Claim(filepath.Join(s.cfg.Out, c.dir), outdir.Cost, "sim workshop: "+p.Command())
	if err != nil {
		return nil, err
	}
	if err := reports.WriteCost(d, res, reports.CostP99); err != nil {
		return nil, err
	}
	var table bytes.Buffer
	reports.CostTable(&table, res)
	href := "/runs/" + c.dir + "/"
	out := &costResult{Chart: href + "cost.png", Table: table.String(), Command: p.Command(), Took: res.Took,
		Links: []link{{"cost.png", href + "cost.png"}, {"cost.csv", href + "cost.csv"}, {"cost.json", href + "cost.json"}}}
	if f := res.Failed(); f != nil {
		out.Failed = f.Error()
	}
	return out, nil
}
