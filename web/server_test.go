package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/worker"
)

// The test binary doubles as the worker binary (LOCKSIM_WORKER=1) of the
// real-server tests.
func TestMain(m *testing.M) {
	worker.MaybeRun()
	code := m.Run()
	env.Cleanup()
	os.Exit(code)
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr        string
		allowRemote bool
		err, warn   bool
	}{
		{"127.0.0.1:7070", false, false, false},
		{"localhost:7070", false, false, false},
		{"[::1]:0", false, false, false},
		{"0.0.0.0:7070", false, true, false},
		{"192.168.1.10:7070", false, true, false},
		{":7070", false, true, false}, // every address
		{"0.0.0.0:7070", true, false, true},
		{"127.0.0.1", false, true, false},
		{"127.0.0.1:notaport", false, true, false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			warn, err := CheckListen(tc.addr, tc.allowRemote)
			if (err != nil) != tc.err || (warn != "") != tc.warn {
				t.Fatalf("CheckListen(%q, %v) = %q, %v; want error %v, warning %v", tc.addr, tc.allowRemote, warn, err, tc.err, tc.warn)
			}
		})
	}
}

// fakePlay stands for reports.Play: it calls the step hooks for each step
// of the story with no events (so no step goes on by itself) and waits
// for ctx's end when block is set.
type fakePlay struct {
	block bool
	mu    sync.Mutex
	steps []int // the steps whose BeforeStep returned
}

func (f *fakePlay) play(ctx context.Context, sc *scenarios.Scenario, o runner.Options) (*runner.Outcome, error) {
	for i, st := range sc.Steps {
		if o.BeforeStep != nil {
			o.BeforeStep(ctx, runner.StepView{Scenario: sc, Index: i, Step: st})
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		f.mu.Lock()
		f.steps = append(f.steps, i)
		f.mu.Unlock()
	}
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, context.Canceled
}

func (f *fakePlay) done() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.steps)
}

func newTestServer(t *testing.T, play func(context.Context, *scenarios.Scenario, runner.Options) (*runner.Outcome, error), addr string) *Server {
	t.Helper()
	s, err := New(Config{Out: t.TempDir(), Play: play})
	if err != nil {
		t.Fatal(err)
	}
	s.Allow(addr)
	t.Cleanup(s.Close)
	return s
}

// TestGuardRefusesForeignHostAndOrigin: a request whose Host or Origin is
// not the served address is refused (DNS rebinding, another page's
// requests); the served address, by IP or as localhost, is answered.
func TestGuardRefusesForeignHostAndOrigin(t *testing.T) {
	s := newTestServer(t, (&fakePlay{}).play, "127.0.0.1:7070")
	h := s.Handler()
	for _, tc := range []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"served address", "GET", "/", "127.0.0.1:7070", "", 200},
		{"localhost", "GET", "/api/stories", "localhost:7070", "", 200},
		{"rebound name", "GET", "/", "attacker.example:7070", "", 403},
		{"rebound name, API", "GET", "/api/debate", "attacker.example", "", 403},
		{"other port", "GET", "/", "127.0.0.1:7071", "", 403},
		{"same-origin POST", "POST", "/api/stop", "127.0.0.1:7070", "http://127.0.0.1:7070", 409},
		{"foreign Origin", "POST", "/api/run", "127.0.0.1:7070", "http://attacker.example", 403},
		{"foreign Origin with the served host", "POST", "/api/run", "127.0.0.1:7070", "https://127.0.0.1:7070", 403},
		{"null Origin", "POST", "/api/run", "127.0.0.1:7070", "null", 403},
		{"foreign Origin on a GET", "GET", "/api/live", "127.0.0.1:7070", "http://attacker.example", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://"+tc.host+tc.path, strings.NewReader(`{}`))
			req.Host = tc.host
			req.Header.Set("Content-Type", "application/json")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("%s %s (Host %s, Origin %q): %d, want %d: %s", tc.method, tc.path, tc.host, tc.origin, w.Code, tc.want, w.Body)
			}
		})
	}

	// A wildcard address (--allow-remote on 0.0.0.0) answers IP literals
	// on its port, never a DNS name.
	s = newTestServer(t, (&fakePlay{}).play, "0.0.0.0:7070")
	for host, want := range map[string]int{"10.1.2.3:7070": 200, "attacker.example:7070": 403, "10.1.2.3:80": 403} {
		req := httptest.NewRequest("GET", "http://"+host+"/", nil)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("wildcard, Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

// post sends a JSON POST to the server as the page does.
func post(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "http://127.0.0.1:7070"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:7070")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestRunStartsCatalogueStoriesOnly: the page names a catalogue story,
// never a path; a form post is refused; one run at a time; Stop ends it.
func TestRunStartsCatalogueStoriesOnly(t *testing.T) {
	f := &fakePlay{block: true}
	s := newTestServer(t, f.play, "127.0.0.1:7070")
	h := s.Handler()
	for body, want := range map[string]int{
		`{"story":"../scenarios/redis-ttl-expiry.yaml","mode":"run"}`: 404,
		`{"story":"/etc/passwd","mode":"run"}`:                        404,
		`{"story":"redis-ttl-expiry.yaml","mode":"run"}`:              404,
		`{"story":"gen-pause","mode":"run"}`:                          400,
		`{"story":"redis-ttl-expiry","mode":"sideways"}`:              400,
	} {
		if w := post(t, h, "/api/run", body); w.Code != want {
			t.Errorf("%s: %d, want %d: %s", body, w.Code, want, w.Body)
		}
	}
	req := httptest.NewRequest("POST", "http://127.0.0.1:7070/api/run", strings.NewReader("story=redis-ttl-expiry&mode=run"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("a form post: %d, want 415", w.Code)
	}

	if w := post(t, h, "/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); w.Code != http.StatusAccepted {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	w = post(t, h, "/api/run", `{"story":"redlock-clock-jump","mode":"run"}`)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "a run is in progress: redis-ttl-expiry") {
		t.Fatalf("a second run while one is in progress: %d %s", w.Code, w.Body)
	}
	if w := post(t, h, "/api/stop", `{}`); w.Code != http.StatusOK {
		t.Fatalf("stop: %d %s", w.Code, w.Body)
	}
	waitFor(t, "the run to stop", func() bool { return s.cur.ended() })
	if st := s.cur.snapshot().State; st != StateStopped {
		t.Fatalf("after Stop: %s, want %s", st, StateStopped)
	}
	if w := post(t, h, "/api/run", `{"story":"redlock-clock-jump","mode":"run"}`); w.Code != http.StatusAccepted {
		t.Fatalf("a run after Stop: %d %s", w.Code, w.Body)
	}
}

// TestStepWaitsForEachNext: in step mode each step waits for one Next,
// and a Next with no step waiting is refused rather than kept for later:
// three presses advance exactly three steps.
func TestStepWaitsForEachNext(t *testing.T) {
	f := &fakePlay{block: true}
	s := newTestServer(t, f.play, "127.0.0.1:7070")
	h := s.Handler()
	if w := post(t, h, "/api/run", `{"story":"redlock-clock-jump","mode":"step"}`); w.Code != http.StatusAccepted {
		t.Fatalf("step: %d %s", w.Code, w.Body)
	}
	for i := 1; i <= 3; i++ {
		waitFor(t, "a step to wait", func() bool { return s.cur.snapshot().State == StateWaiting })
		if w := post(t, h, "/api/next", `{}`); w.Code != http.StatusOK {
			t.Fatalf("next %d: %d %s", i, w.Code, w.Body)
		}
		waitFor(t, "the step to go on", func() bool { return f.done() == i })
	}
	waitFor(t, "the 4th step to wait", func() bool { return s.cur.snapshot().State == StateWaiting })
	time.Sleep(50 * time.Millisecond)
	if n := f.done(); n != 3 {
		t.Fatalf("after three presses %d steps went on, want 3", n)
	}
	snap := s.cur.snapshot()
	if snap.Step == nil || snap.Step.Index != 3 || !snap.Step.Waiting || snap.Step.AutoMS != 0 {
		t.Fatalf("the waiting step: %+v", snap.Step)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestDebateQuotesAreTheCatalogues: every quotation and summary of the
// debate page is word for word in the source field of one of its claim's
// stories or in docs/workshop.md, as are its section and address; every
// story named is in the catalogue.
func TestDebateQuotesAreTheCatalogues(t *testing.T) {
	d, err := LoadDebate()
	if err != nil {
		t.Fatal(err)
	}
	list, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*scenarios.Scenario{}
	for _, sc := range list {
		byName[sc.Name] = sc
	}
	workshop, err := os.ReadFile("../docs/workshop.md")
	if err != nil {
		t.Fatal(err)
	}
	space := regexp.MustCompile(`\s+`)
	norm := func(s string) string { return space.ReplaceAllString(strings.TrimSpace(s), " ") }
	for _, c := range d.Claims {
		t.Run(c.Claim, func(t *testing.T) {
			var texts []string
			for _, name := range c.Stories {
				sc := byName[name]
				if sc == nil {
					t.Fatalf("story %q is not in the catalogue", name)
				}
				texts = append(texts, norm(sc.Source))
			}
			texts = append(texts, norm(string(workshop)))
			passage := norm(c.Quote + c.Summary)
			var in []string
			for _, text := range texts {
				if strings.Contains(text, passage) {
					in = append(in, text)
				}
			}
			if len(in) == 0 {
				t.Fatalf("%q is in no source field of %v nor in docs/workshop.md", passage, c.Stories)
			}
			for _, part := range []string{c.Section, c.Address} {
				if part != "" && !slices.ContainsFunc(in, func(text string) bool { return strings.Contains(text, norm(part)) }) {
					t.Errorf("%q is not in a text the passage comes from", part)
				}
			}
		})
	}
}

// TestCostRefusesForeignOriginAndWaitsItsTurn: POST /api/cost from
// another origin (or under another Host) is refused and starts nothing;
// the page names a preset, never a lock; while a story runs, the cost
// run is refused (one run at a time), and the page lists the preset with
// the sim cost command it is.
func TestCostRefusesForeignOriginAndWaitsItsTurn(t *testing.T) {
	f := &fakePlay{block: true}
	s := newTestServer(t, f.play, "127.0.0.1:7070")
	h := s.Handler()
	for _, tc := range []struct{ name, host, origin string }{
		{"foreign Origin", "127.0.0.1:7070", "http://attacker.example"},
		{"null Origin", "127.0.0.1:7070", "null"},
		{"rebound Host", "attacker.example:7070", "http://attacker.example:7070"},
	} {
		req := httptest.NewRequest("POST", "http://"+tc.host+"/api/cost", strings.NewReader(`{"preset":"debate"}`))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", tc.origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403: %s", tc.name, w.Code, w.Body)
		}
	}
	if s.cost != nil {
		t.Fatalf("a refused request started a cost run")
	}
	for body, want := range map[string]int{`{"preset":"redis,redlock"}`: 404, `{"preset":"../etc"}`: 404, `nonsense`: 400} {
		if w := post(t, h, "/api/cost", body); w.Code != want {
			t.Errorf("%s: %d, want %d: %s", body, w.Code, want, w.Body)
		}
	}
	if w := post(t, h, "/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); w.Code != http.StatusAccepted {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	w := post(t, h, "/api/cost", `{"preset":"debate"}`)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "a run is in progress: redis-ttl-expiry") || s.cost != nil {
		t.Errorf("a cost run while a story runs: %d %s", w.Code, w.Body)
	}
	req := httptest.NewRequest("GET", "http://127.0.0.1:7070/api/costs", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"command":"sim cost --locks redis,redlock,postgres-session --duration 300ms"`) {
		t.Errorf("/api/costs: %s", rec.Body)
	}
}
