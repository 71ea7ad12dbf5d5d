package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/reports"
)

// startReal serves a Server that plays runs on real servers
// (reports.Play) into a temp dir.
func startReal(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(Config{Out: t.TempDir(), Play: reports.Play})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	s.Allow(ts.Listener.Addr().String())
	t.Cleanup(func() {
		s.Close() // stops a run, and waits for its teardown
		ts.Close()
	})
	return s, ts
}

// stream reads the live stream's messages onto a channel until ctx ends.
func stream(t *testing.T, ctx context.Context, url string) <-chan runMessage {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/live", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("live stream: %s", resp.Status)
	}
	out := make(chan runMessage, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m runMessage
			if json.Unmarshal([]byte(line), &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWorkshopLive plays redis-ttl-expiry on real servers through the
// page's API: the live stream draws the timeline while the run goes, with
// the events so far (before the end), then sends the verdict, unsafe,
// with its evidence and the links to the run directory's reports, which
// the server serves. It reports how long an event took from being
// recorded to reaching the stream (the target: 100 ms, median).
func TestWorkshopLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	s, ts := startReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	msgs := stream(t, ctx, ts.URL)
	if code, body := postJSON(t, ts.URL+"/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); code != http.StatusAccepted {
		t.Fatalf("run: %d %s", code, body)
	}
	var live []int // the event counts of the timelines drawn while running
	var last *runSnapshot
	for m := range msgs {
		r := m.Run
		if r == nil {
			continue
		}
		if r.State == StateRunning && r.Events > 0 && strings.Contains(r.Timeline, `class="timeline"`) {
			live = append(live, r.Events)
		}
		if r.State == StateDone || r.State == StateFailed || r.State == StateStopped {
			last = r
			if m.Verdicts["redis-ttl-expiry"] != "unsafe" {
				t.Errorf("the session's verdicts: %v", m.Verdicts)
			}
			break
		}
	}
	if last == nil {
		t.Fatal("the stream ended before the run")
	}
	if last.State != StateDone || last.Result == nil {
		t.Fatalf("the run ended %s: %s", last.State, last.Error)
	}
	if len(live) < 2 || live[0] >= last.Events || !slices.IsSorted(live) {
		t.Errorf("live timelines before the end, by events drawn: %v (of %d): want several, growing", live, last.Events)
	}
	res := last.Result
	if res.Verdict != "unsafe" || !res.Matches || len(res.Evidence) == 0 {
		t.Errorf("verdict %s (matches %v), %d evidence: %s", res.Verdict, res.Matches, len(res.Evidence), res.Summary)
	}
	if !strings.Contains(last.Timeline, `class="tl-belief"`) || !strings.Contains(last.Timeline, "Client 2") {
		t.Errorf("the final timeline lacks the clients' leases")
	}
	for _, l := range res.Links {
		resp, err := http.Get(ts.URL + l.Href)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) < 1000 {
			t.Errorf("%s: %s, %d bytes", l.Href, resp.Status, len(b))
		}
	}
	lat := latencies(s)
	if len(lat) == 0 {
		t.Fatal("no latency measured")
	}
	slices.Sort(lat)
	t.Logf("an event reached the live stream %v after it was recorded (median of %d; max %v)", lat[len(lat)/2].Round(time.Millisecond/10), len(lat), lat[len(lat)-1].Round(time.Millisecond/10))
}

// TestWorkshopSweepLive plays the page's sweep preset on real servers:
// its points reach the live stream as their trials finish, each time
// with the plots drawn (reports.RatePlotSVG), before the sweep ends with
// every point; a story cannot start while it runs.
func TestWorkshopSweepLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and PostgreSQL")
	}
	_, ts := startReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	msgs := stream(t, ctx, ts.URL)
	if code, body := postJSON(t, ts.URL+"/api/sweep", `{"preset":"pause"}`); code != http.StatusAccepted {
		t.Fatalf("sweep: %d %s", code, body)
	}
	if code, body := postJSON(t, ts.URL+"/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); code != http.StatusConflict || !strings.Contains(body, "the sweep pause") {
		t.Errorf("a story during the sweep: %d %s", code, body)
	}
	var partial []int // the points drawn while the sweep ran
	var last *sweepSnapshot
	for m := range msgs {
		w := m.Sweep
		if w == nil {
			continue
		}
		if w.State == StateRunning && len(w.Rows) > 0 {
			if len(w.Plots) != 2 || !strings.Contains(w.Plots[0], "<svg") {
				t.Fatalf("%d points drawn as %d plots", len(w.Rows), len(w.Plots))
			}
			if len(partial) == 0 || partial[len(partial)-1] != len(w.Rows) {
				partial = append(partial, len(w.Rows))
			}
		}
		if w.State != StateRunning {
			last = w
			break
		}
	}
	if last == nil || last.State != StateDone {
		t.Fatalf("the sweep ended %+v", last)
	}
	if len(last.Rows) != last.Total || len(partial) < 2 {
		t.Errorf("%d of %d points at the end; drawn live at %v points", len(last.Rows), last.Total, partial)
	}
	t.Logf("points drawn live: %v of %d", partial, last.Total)
}

// latencies are, for the current run's story events, how long each took
// from being recorded to being first drawn in a message to the pages.
func latencies(s *Server) []time.Duration {
	s.mu.Lock()
	r := s.cur
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for seq, at := range r.recorded {
		if p, ok := r.pushed[seq]; ok {
			out = append(out, p.Sub(at))
		}
	}
	return out
}
