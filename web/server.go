// Package web is `sim workshop`'s page: the Redlock debate on one page,
// each story run live from it on real servers, its timeline drawn as the
// events are recorded by the same code as report.html's.
//
// The server is for a presenter's own machine. It listens on loopback
// unless told otherwise (CheckListen), refuses any request whose Host or
// Origin is not the address it serves (a page elsewhere cannot drive it
// through DNS rebinding), starts only catalogue stories by name, plays
// one run at a time, and serves every asset from the binary.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
)

//go:embed assets
var assets embed.FS

// Config is what a Server needs.
type Config struct {
	// Out is the directory the run directories go into, one per run
	// (NAME-TIME, as sim run names them under runs/).
	Out string
	// Play runs a story and writes its run directory (reports.Play).
	Play func(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error)
	// Host says where the servers run (sim run's --backend).
	Host runner.Host
	// Log receives a line for each run started and ended; nil: none.
	Log io.Writer
}

// Server serves the workshop page and plays its runs. Make one with New,
// then Serve.
type Server struct {
	cfg     Config
	stories map[string]*scenarios.Scenario
	order   []*scenarios.Scenario
	debate  *Debate
	// hosts are the Host header values the server answers: the address it
	// serves (set by Serve, or by Allow in tests).
	hosts map[string]bool
	// anyIP accepts any IP literal with the served port: a wildcard
	// address (--allow-remote on 0.0.0.0) has no one name.
	anyIP bool
	port  string

	mu sync.Mutex
	// cur is the run in progress or the last one; nil before the first.
	cur    *liveRun
	nextID int
	// sweep is the sweep in progress or the last one; nil before the
	// first. A sweep and a story run never run at once.
	sweep *liveSweep
	// hunt is the hunt in progress or the last one; nil before the
	// first. It too is the one run at a time.
	hunt *liveHunt
	// cost is the cost run in progress or the last one; nil before the
	// first. It too is the one run at a time.
	cost *liveCost
	// verdicts are the verdicts of the runs played since the server
	// started, by story (the debate page's "predict" switch shows a
	// story's expected verdict once it has run).
	verdicts map[string]checker.Verdict
	// dirs are the run directories this server wrote (names in Out):
	// the only ones /runs/ serves.
	dirs map[string]bool
	subs map[chan struct{}]bool
	// done ends the server's runs and streams (Close).
	done   chan struct{}
	closed bool
	runs   sync.WaitGroup
}

// New loads the catalogue and the debate's claims.
func New(cfg Config) (*Server, error) {
	if cfg.Play == nil {
		return nil, errors.New("web: Config.Play is nil")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	list, err := scenarios.Catalogue()
	if err != nil {
		return nil, err
	}
	d, err := LoadDebate()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, stories: map[string]*scenarios.Scenario{}, debate: d, hosts: map[string]bool{},
		verdicts: map[string]checker.Verdict{}, dirs: map[string]bool{}, subs: map[chan struct{}]bool{}, done: make(chan struct{})}
	for _, sc := range list {
		s.stories[sc.Name] = sc
		s.order = append(s.order, sc)
	}
	for _, c := range d.Claims {
		for _, name := range c.Stories {
			if s.stories[name] == nil {
				return nil, fmt.Errorf("debate.yaml: claim %q names %q, which is not in the catalogue", c.Claim, name)
			}
		}
	}
	return s, nil
}

// CheckListen checks the --listen address: loopback, unless allowRemote.
// A remote address allowed comes back with a warning to print.
func CheckListen(addr string, allowRemote bool) (warning string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--listen: expected HOST:PORT (e.g. 127.0.0.1:7070), got %q", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", fmt.Errorf("--listen: bad port %q", port)
	}
	if loopback(host) {
		return "", nil
	}
	if !allowRemote {
		return "", fmt.Errorf("--listen %s is not a loopback address: anyone who can reach it could start runs on this machine; add --allow-remote if that is what you want", addr)
	}
	return fmt.Sprintf("listening on %s, which is not loopback: anyone who can reach it can start runs on this machine (real servers, real faults)", addr), nil
}

// loopback says whether host (an IP literal or localhost) is a loopback
// address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Allow sets the address the server answers as (host:port of its
// listener): the Host header a request must carry, and the origin a
// request that has one must come from.
func (s *Server) Allow(addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	s.port = port
	s.hosts[addr] = true
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		s.anyIP = true
	}
	if loopback(host) {
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			s.hosts[h+":"+port] = true
		}
	}
}

// allowedHost says whether a Host header (or an Origin's host) names the
// served address. A name other than localhost is never accepted with a
// wildcard address: a DNS name is what rebinding forges.
func (s *Server) allowedHost(h string) bool {
	if s.hosts[h] {
		return true
	}
	if !s.anyIP {
		return false
	}
	host, port, err := net.SplitHostPort(h)
	return err == nil && port == s.port && net.ParseIP(strings.Trim(host, "[]")) != nil
}

// guard refuses requests whose Host or Origin is not the served address,
// and state-changing requests that are not JSON POSTs (which a form on
// another page cannot send without the browser asking first).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowedHost(r.Host) {
			http.Error(w, "refused: Host "+r.Host+" is not the address sim workshop serves", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if !strings.HasPrefix(o, "http://") || !s.allowedHost(strings.TrimPrefix(o, "http://")) {
				http.Error(w, "refused: Origin "+o+" is not the address sim workshop serves", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// Handler is the server's HTTP handler, guarded.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /api/stories", s.handleStories)
	mux.HandleFunc("GET /api/debate", s.handleDebate)
	mux.HandleFunc("GET /api/live", s.handleLive)
	mux.HandleFunc("POST /api/run", s.post(s.handleRun))
	mux.HandleFunc("POST /api/next", s.post(s.handleNext))
	mux.HandleFunc("POST /api/stop", s.post(s.handleStop))
	mux.HandleFunc("GET /api/sweeps", s.handleSweeps)
	mux.HandleFunc("POST /api/sweep", s.post(s.handleSweep))
	mux.HandleFunc("GET /api/hunts", s.handleHunts)
	mux.HandleFunc("POST /api/hunt", s.post(s.handleHunt))
	mux.HandleFunc("GET /api/costs", s.handleCosts)
	mux.HandleFunc("POST /api/cost", s.post(s.handleCost))
	mux.HandleFunc("GET /runs/{dir}/{file...}", s.handleRunFile)
	return s.guard(mux)
}

// post admits JSON requests only.
func (s *Server) post(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			http.Error(w, "expected Content-Type application/json", http.StatusUnsupportedMediaType)
			return
		}
		h(w, r)
	}
}

// Serve serves on ln until ctx ends, then stops any run (its servers and
// clients are stopped, its temp dirs removed, as for Ctrl-C in sim run)
// and returns once it has.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.Allow(ln.Addr().String())
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.Close()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shut)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close stops the run in progress, ends the live streams, and waits for
// the run's teardown.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		if r := s.cur; r != nil {
			r.cancel()
		}
		if w := s.sweep; w != nil {
			w.cancel()
		}
		if h := s.hunt; h != nil {
			h.cancel()
		}
		if c := s.cost; c != nil {
			c.cancel()
		}
	}
	s.mu.Unlock()
	s.runs.Wait()
}

// storyView is a story as the page shows it.
type storyView struct {
	Name     string          `json:"name"`
	Title    string          `json:"title"`
	Source   string          `json:"source"`
	Explain  string          `json:"explain"`
	Lock     string          `json:"lock"`
	Fault    string          `json:"fault"`
	Expected checker.Verdict `json:"expected"`
	Scripted bool            `json:"scripted"`
	Steps    []stepLine      `json:"steps"`
	// Counterfactual says what the counterfactual changes and the
	// verdict it must reach.
	Counterfactual         string          `json:"counterfactual,omitempty"`
	CounterfactualExpected checker.Verdict `json:"counterfactual_expected,omitempty"`
}

// stepLine is one step of a story: its narration and what it does.
type stepLine struct {
	Say string `json:"say,omitempty"`
	Do  string `json:"do"`
}

func newStoryView(sc *scenarios.Scenario) storyView {
	v := storyView{Name: sc.Name, Title: sc.Title, Source: strings.TrimSpace(sc.Source), Explain: strings.TrimSpace(sc.Explain),
		Lock: sc.Lock, Fault: sc.Fault, Expected: sc.Expected, Scripted: sc.Generator == nil}
	for _, st := range sc.Steps {
		v.Steps = append(v.Steps, stepLine{Say: st.Say, Do: st.Describe()})
	}
	if cf := sc.Counterfactual; cf != nil {
		v.Counterfactual = cf.Change
		if c, err := sc.CounterfactualScenario(); err == nil {
			v.CounterfactualExpected = c.Expected
		}
	}
	return v
}

func (s *Server) handleStories(w http.ResponseWriter, _ *http.Request) {
	out := make([]storyView, 0, len(s.order))
	for _, sc := range s.order {
		out = append(out, newStoryView(sc))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDebate(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.debate)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// refuse answers an API request with an error the page shows.
func refuse(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// handleRunFile serves a file of a run directory this server wrote,
// read-only.
func (s *Server) handleRunFile(w http.ResponseWriter, r *http.Request) {
	dir, file := r.PathValue("dir"), r.PathValue("file")
	s.mu.Lock()
	ok := s.dirs[dir]
	s.mu.Unlock()
	if !ok || !fs.ValidPath(file) {
		http.NotFound(w, r)
		return
	}
	root := os.DirFS(s.cfg.Out)
	http.ServeFileFS(w, r, root, dir+"/"+file)
}
