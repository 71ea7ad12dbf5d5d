package web

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/locksim/locksim/reports"
)

var shots = flag.String("screenshots", "", "also save TestWorkshopInChromium's screenshots into `DIR` (e.g. ../docs)")

// chromium finds Debian's chromium (or another Chrome) on this machine.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// children lists this process's child processes named name (the servers
// a run starts are its children).
func children(t *testing.T, name string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.HasPrefix(s[strings.IndexByte(s, '(')+1:], name) {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == me {
			out = append(out, pid)
		}
	}
	return out
}

// browser is a headless Chromium driven by chromedp, with the helpers
// the browser tests share.
type browser struct {
	t   *testing.T
	ctx context.Context
	// dir is where screenshots go (-screenshots, or a temp dir).
	dir string
}

// newBrowser starts Chromium for test t, stopped at its end, with
// flags added to the usual ones.
func newBrowser(t *testing.T, timeout time.Duration, flags ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Fatal("chromium is not installed: make test-deps installs it (apt-get install -y chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1600, 1000), chromedp.UserDataDir(t.TempDir()))
	opts = append(opts, flags...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancel(); cancelB(); cancelA() })
	dir := *shots
	if dir == "" {
		dir = t.TempDir()
	}
	return &browser{t: t, ctx: ctx, dir: dir}
}

func (b *browser) must(what string, err error) {
	b.t.Helper()
	if err != nil {
		status, _ := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS("#status")))
		b.t.Fatalf("%s: %v (status %q)", what, err, status)
	}
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.must(what, chromedp.Do(b.ctx, steps...))
}

// shot saves the whole page, or with viewport what the screen shows.
func (b *browser) shot(name string, viewport bool) {
	b.t.Helper()
	a := chromedp.FullScreenshot(100)
	if viewport {
		a = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(b.ctx, a)
	b.must("screenshot", err)
	path := filepath.Join(b.dir, name)
	b.must("screenshot", os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	b.must(sel, err)
	return s
}

func (b *browser) eval(expr string) bool {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
	b.must(expr, err)
	return v
}

// until waits until a JavaScript condition holds (90 s at most).
func until(expr string) chromedp.Action[chromedp.Void] { return within(expr, 90*time.Second) }

// within waits until a JavaScript condition holds, d at most.
func within(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(d))
}

// TestWorkshopInChromium drives the page in headless Chromium as a
// presenter would, on real servers: the debate page shows the claims
// with their quotations and hides the expected verdicts under "predict";
// on redlock-clock-jump's page, `s` starts step mode and the first step
// waits; three presses of space advance exactly three steps; Escape stops
// the run and leaves no redis-server behind; `r` runs the story, the live
// timeline is drawn before the verdict, and the verdict `unsafe` appears
// with both clients' holds and their overlap in the timeline;
// Counterfactual draws the story without its cause under it, and a second
// tab cannot start a run meanwhile; the sweep page draws its points live
// and stops on Escape. It saves a screenshot of each stage
// (-screenshots DIR keeps them).
func TestWorkshopInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium, redis-server and PostgreSQL")
	}
	b := newBrowser(t, 3*time.Minute)
	_, ts := startReal(t)
	ctx, do, shot, text, eval := b.ctx, b.do, b.shot, b.text, b.eval
	key := chromedp.KeyEvent

	// The debate page: four columns of claims, the verdicts hidden.
	do("the debate page",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#side-antirez .claim blockquote`)),
		key("p"), // predict on
		chromedp.WaitVisible(chromedp.CSS(`.badge.hidden-verdict`)))
	shot("workshop-debate.png", true)
	if q := text(`#side-kleppmann`); !strings.Contains(q, "“The clock on node C jumps forward, causing the lock to expire.”") {
		t.Errorf("Kleppmann's column lacks his clock-jump sentence:\n%s", q)
	}

	// Step mode: three presses, three steps.
	do("step mode",
		chromedp.Click(chromedp.CSS(`a.story-link[href="#/story/redlock-clock-jump"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run`)),
		key("s"),
		until(`document.querySelector("#status.waiting") !== null`))
	for i := 1; i <= 3; i++ {
		press := " " // space, or the right arrow a presenter's clicker sends
		if i == 2 {
			press = kb.ArrowRight
		}
		do("press "+strconv.Itoa(i),
			key(press),
			until(`document.querySelector("#status.waiting") !== null && document.querySelector("#status").textContent.startsWith("Step `+strconv.Itoa(i+1)+` ")`))
	}
	if n := eval(`document.querySelectorAll("#steps li.done").length === 3`); !n {
		t.Errorf("after three presses the steps done are not 3 (status %q)", text("#status"))
	}
	shot("workshop-story-step.png", false)
	if len(children(t, "redis-server")) == 0 {
		t.Errorf("no redis-server while the story waits at a step")
	}
	do("stop", key(kb.Escape), until(`document.querySelector("#status").textContent.startsWith("Stopped")`))
	if left := children(t, "redis-server"); len(left) > 0 {
		t.Errorf("Stop left redis-server processes behind: %v", left)
	}

	// Run: the live timeline, then the verdict.
	do("run", key("r"), until(`ui.live.run.mode === "run"`))
	do("the verdict", chromedp.WaitVisible(chromedp.CSS(`#verdict`)), chromedp.ScrollIntoView(chromedp.CSS(`#verdict`)))
	liveSeen := eval(`ui.liveDrawn === ui.live.run.id`)
	shot("workshop-story.png", false)
	if !liveSeen {
		t.Errorf("no live timeline before the verdict")
	}
	if v := text("#verdict .badge"); !strings.EqualFold(v, "unsafe") {
		t.Errorf("verdict %q, want unsafe", v)
	}
	holds1 := eval(`[...document.querySelectorAll("#timeline svg .tl-hold title")].some(t => t.textContent.includes("client 1"))`)
	holds2 := eval(`[...document.querySelectorAll("#timeline svg .tl-hold title")].some(t => t.textContent.includes("client 2"))`)
	overlap := eval(`document.querySelector("#timeline svg .tl-overlap") !== null`)
	if !holds1 || !holds2 || !overlap {
		t.Errorf("the timeline: client 1's holds %v, client 2's %v, their overlap %v", holds1, holds2, overlap)
	}
	if !eval(`document.querySelector("#expected .badge.unsafe") !== null`) {
		t.Errorf("the expected verdict is still hidden after the run")
	}
	// Counterfactual: the story without the jump, its timeline under the
	// first; meanwhile a second tab sees the run and cannot start another.
	do("counterfactual", key("c"), until(`document.querySelector("#status").textContent.includes("running")`))
	tab, closeTab := chromedp.NewContext(ctx)
	defer closeTab()
	if err := chromedp.Do(tab,
		chromedp.Navigate(ts.URL+"/#/story/redis-ttl-expiry"),
		chromedp.WaitVisible(chromedp.CSS(`#live-banner a`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#status").textContent.startsWith("Another story is running: redlock-clock-jump")`),
	); err != nil {
		t.Fatalf("a second tab: %v", err)
	}
	if disabled, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector("#run").disabled`)); err != nil || !disabled {
		t.Errorf("a second tab's Run button is enabled (%v) during another run", err)
	}
	if err := chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`fetch("/api/run", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({story: "redis-ttl-expiry", mode: "run"})}).then(r => document.title = "status " + r.status)`),
		chromedp.Poll[chromedp.Void](`document.title === "status 409"`)); err != nil {
		t.Errorf("a second tab started a second run: %v", err)
	}
	closeTab()
	do("the counterfactual's verdict", until(`document.querySelector("#cf-sentence") !== null && document.querySelector("#cf-timeline svg .tl-belief") !== null`))
	if s := text("#cf-sentence"); !strings.Contains(s, "without the clock jump on C: safe (the verdict flips, as it must)") {
		t.Errorf("the counterfactual says %q", s)
	}
	shot("workshop-story-counterfactual.png", false)

	do("high contrast", key("h"), chromedp.WaitVisible(chromedp.CSS(`body.contrast`)), chromedp.ScrollIntoView(chromedp.CSS(`#verdict`)))
	shot("workshop-story-contrast.png", true)
	do("normal contrast", key("h"))

	// The sweep page: `r` starts the preset, its points appear as their
	// trials finish; Esc stops it and leaves no redis-server behind.
	do("the sweep page", chromedp.Navigate(ts.URL+"/#/sweep"), chromedp.WaitVisible(chromedp.CSS(`#sweep-start`)),
		key("r"), until(`document.querySelectorAll("#rows tr").length > 9 && document.querySelectorAll("#plots svg").length === 2`))
	shot("workshop-sweep.png", true)
	do("stop the sweep", key(kb.Escape), until(`document.querySelector("#status").textContent.startsWith("Stopped")`))
	if left := children(t, "redis-server"); len(left) > 0 {
		t.Errorf("Stop left redis-server processes behind: %v", left)
	}
}

// TestWorkshopHuntInChromium plays the hunt page's preset in Chromium on
// real servers (a small hunt: 10 candidates at most, its shrink bounded
// to 40 runs): `r` starts it; the story runs it plays are drawn live,
// with a dot per run's verdict, while it says its candidates; a story
// cannot start meanwhile; at the end the found story and the
// hand-written one it finds again (redlock-clock-jump) sit side by side,
// both unsafe, each with its steps and timeline, and no redis-server is
// left behind.
func TestWorkshopHuntInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium and redis-server")
	}
	b := newBrowser(t, 8*time.Minute)
	_, ts := startReal(t)
	b.do("the hunt page", chromedp.Navigate(ts.URL+"/#/hunt"), chromedp.WaitVisible(chromedp.CSS(`#hunt-start`)),
		chromedp.KeyEvent("r"),
		until(`document.querySelector("#hunt-timeline svg .tl-belief") !== null && document.querySelector("#hunt-lines").textContent.includes("candidate 1:")`))
	b.shot("workshop-hunt-live.png", true)
	if status := b.text("#status"); !strings.HasPrefix(status, "Hunting") {
		t.Fatalf("the hunt ended early: %s", status)
	}
	if code, body := postJSON(t, ts.URL+"/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); code != http.StatusConflict || !strings.Contains(body, "the hunt redlock") {
		t.Errorf("a story during the hunt: %d %s", code, body)
	}
	b.do("the hunt's end", within(`document.querySelector("#hunt-verdict") !== null || /^(Stopped|The hunt failed)/.test(document.querySelector("#status").textContent)`, 6*time.Minute))
	if status := b.text("#status"); !strings.HasPrefix(status, "Done") {
		t.Fatalf("the hunt ended: %s", status)
	}
	b.do("the side by side", until(`document.querySelectorAll("#sides .side").length === 2 && document.querySelectorAll("#hunt-result .side-timeline svg").length === 2`))
	sides := b.text("#sides")
	for _, want := range []string{"Found by sim hunt", "hunt-redlock-found", "Written by hand", "redlock-clock-jump"} {
		if !strings.Contains(sides, want) {
			t.Errorf("the side by side lacks %q:\n%s", want, sides)
		}
	}
	if n := b.eval(`document.querySelectorAll("#sides .side .badge.unsafe").length === 2`); !n {
		t.Errorf("the two stories did not both end unsafe:\n%s", sides)
	}
	if !b.eval(`document.querySelectorAll("#hunt-dots .dot").length > 3`) {
		t.Errorf("fewer than 4 story runs shown as they ended")
	}
	b.shot("workshop-hunt.png", false)
	if left := children(t, "redis-server"); len(left) > 0 {
		t.Errorf("the hunt left redis-server processes behind: %v", left)
	}
}

// TestWorkshopFirstPaint measures the target, a first paint
// under 1 s from a cold start of sim workshop: with Chromium already up
// (on about:blank), it starts a freshly built `sim workshop` three
// times, each on a port of its own (nothing cached), opens its address as
// soon as it prints it, and reports the time from starting the process
// to its address printed, to the page's first contentful paint and to
// the debate's columns drawn, and the median first paint. It reports the
// figures; it asserts no time.
func TestWorkshopFirstPaint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium")
	}
	bin := filepath.Join(t.TempDir(), "sim")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/locksim/locksim/cmd/sim").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b := newBrowser(t, 2*time.Minute)
	b.do("a blank page", chromedp.Navigate("about:blank"))
	var paints []time.Duration
	for i := 0; i < 3; i++ {
		paints = append(paints, coldStart(t, b, bin))
	}
	slices.Sort(paints)
	t.Logf("first contentful paint from a cold start of sim workshop: median %v of %v (the target: under 1s)", paints[1].Round(time.Millisecond), paints)
}

// coldStart starts sim workshop, opens its page, stops it, and returns
// the time from its start to the page's first contentful paint.
func coldStart(t *testing.T, b *browser, bin string) time.Duration {
	t.Helper()
	t0 := time.Now()
	cmd := exec.Command(bin, "workshop", "--listen", "127.0.0.1:0", "--out", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { // Ctrl-C, and a kill if that is not enough
		cmd.Process.Signal(os.Interrupt)
		stop := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		stop.Stop()
	}()
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://") {
		t.Fatalf("sim workshop printed %q: %v", url, err)
	}
	listening := time.Since(t0)
	b.do("the debate page", chromedp.Navigate(strings.TrimSpace(url)), chromedp.WaitVisible(chromedp.CSS(`#side-kleppmann .claim`)),
		until(`performance.getEntriesByName("first-contentful-paint").length > 0`))
	drawn := time.Since(t0)
	// Epoch milliseconds: when the navigation began, and the paint.
	at, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]float64](`[performance.timeOrigin, performance.timeOrigin + performance.getEntriesByName("first-contentful-paint")[0].startTime]`))
	b.must("first-contentful-paint", err)
	epoch := func(ms float64) time.Duration {
		return time.UnixMicro(int64(ms * 1000)).Sub(t0).Round(time.Millisecond)
	}
	paint := epoch(at[1])
	t.Logf("from starting sim workshop: address printed %v, navigation began %v, first contentful paint %v, the debate's columns drawn by %v",
		listening.Round(time.Millisecond), epoch(at[0]), paint, drawn.Round(time.Millisecond))
	return paint
}

// TestWorkshopRefusesForeignOriginInChromium: a page of another origin
// cannot drive the workshop. Chromium, told that rebind.test is
// 127.0.0.1 (what DNS rebinding makes a name say), opens the workshop's
// port under that name and gets the refusal, not the page, and its
// same-origin POST of a run is refused too; a page served from another
// port posts a run to the workshop and is refused (403, on the Origin).
// No run starts.
func TestWorkshopRefusesForeignOriginInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium")
	}
	s, err := New(Config{Out: t.TempDir(), Play: reports.Play})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refused []string // "METHOD PATH" of each request answered 403
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code == http.StatusForbidden {
			mu.Lock()
			refused = append(refused, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	defer ts.Close()
	s.Allow(ts.Listener.Addr().String())
	defer s.Close()
	post := `fetch(%q, {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"story":"redis-ttl-expiry","mode":"run"}'}).then(r => document.title = "status " + r.status, e => document.title = "failed")`
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><title>elsewhere</title><script>`+post+`</script>`, ts.URL+"/api/run")
	}))
	defer foreign.Close()

	b := newBrowser(t, time.Minute, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	rebound := "http://rebind.test:" + port
	b.do("the workshop under another name", chromedp.Navigate(rebound+"/"))
	if body := b.text("body"); !strings.Contains(body, "refused: Host rebind.test:"+port) {
		t.Errorf("the workshop under another name answered %q", body)
	}
	b.do("a run posted under another name", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(post, rebound+"/api/run")), until(`document.title.startsWith("status") || document.title === "failed"`))
	if !b.eval(`document.title === "status 403"`) {
		t.Errorf("a run posted under another name was not refused")
	}
	b.do("a page elsewhere", chromedp.Navigate(foreign.URL+"/"), until(`document.title !== "elsewhere"`))
	mu.Lock()
	got := slices.Clone(refused)
	mu.Unlock()
	for _, want := range []string{"GET /", "POST /api/run", "OPTIONS /api/run"} {
		if !slices.Contains(got, want) {
			t.Errorf("refused %q: not %q", got, want)
		}
	}
	s.mu.Lock()
	ran := s.cur != nil
	s.mu.Unlock()
	if ran {
		t.Errorf("a run started")
	}
}

// TestWorkshopCostInChromium plays the cost view's preset in Chromium on
// real servers (redis, Redlock with three persistences, a PostgreSQL
// session lock direct and through pgbouncer; 300 ms points): Measure
// starts it, the progress bar counts its points while a story cannot
// start; at its end cost.png appears (loaded, not broken) with sim
// cost's table, and no redis-server, postgres or pgbouncer is left
// behind. It saves workshop-cost.png (-screenshots DIR keeps it).
func TestWorkshopCostInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium, redis-server, PostgreSQL and pgbouncer")
	}
	b := newBrowser(t, 5*time.Minute)
	_, ts := startReal(t)
	b.do("the cost view", chromedp.Navigate(ts.URL+"/#/cost"), chromedp.WaitVisible(chromedp.CSS(`#cost-start`)),
		chromedp.WaitVisible(chromedp.CSS(`#cost-read`)),
		chromedp.Click(chromedp.CSS(`#cost-start`)),
		until(`document.querySelector("#status").textContent.startsWith("Measuring") && document.querySelector("#cost-progress").value > 0`))
	if code, body := postJSON(t, ts.URL+"/api/run", `{"story":"redis-ttl-expiry","mode":"run"}`); code != http.StatusConflict || !strings.Contains(body, "the cost run debate") {
		t.Errorf("a story during the cost run: %d %s", code, body)
	}
	b.do("the cost run's end", within(`/^(Done|Stopped|The cost run failed)/.test(document.querySelector("#status").textContent)`, 4*time.Minute))
	if status := b.text("#status"); !strings.HasPrefix(status, "Done") || strings.Contains(status, "Not measured") {
		t.Fatalf("the cost run ended: %s", status)
	}
	b.do("the chart", until(`document.querySelector("#cost-png") !== null && document.querySelector("#cost-png").complete && document.querySelector("#cost-png").naturalWidth > 500`))
	table := b.text("#cost-table")
	for _, want := range []string{"sim cost --locks redis,redlock,postgres-session --duration 300ms", "floors", "redlock/always", "postgres-session/pgbouncer"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	b.shot("workshop-cost.png", false)
	for _, name := range []string{"redis-server", "postgres", "pgbouncer"} {
		if left := children(t, name); len(left) > 0 {
			t.Errorf("the cost run left %s processes behind: %v", name, left)
		}
	}
}
