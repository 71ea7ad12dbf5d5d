package web

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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
	bin := chromium()
	if bin == "" {
		t.Fatal("chromium is not installed: make test-deps installs it (apt-get install -y chromium)")
	}
	_, ts := startReal(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1600, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			var status string
			status, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status")))
			t.Fatalf("%s: %v (status %q)", what, err, status)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		must(what, chromedp.Do(ctx, steps...))
	}
	// shot saves the whole page, or with viewport what the screen shows.
	shot := func(name string, viewport bool) {
		t.Helper()
		a := chromedp.FullScreenshot(100)
		if viewport {
			a = chromedp.CaptureScreenshot()
		}
		png, err := chromedp.Run(ctx, a)
		must("screenshot", err)
		path := filepath.Join(dir, name)
		if *shots != "" {
			path = filepath.Join(*shots, name)
		}
		must("screenshot", os.WriteFile(path, png, 0o644))
		t.Logf("screenshot %s (%d bytes)", path, len(png))
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(sel, err)
		return s
	}
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		must(expr, err)
		return v
	}
	// until waits until a JavaScript condition holds.
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second))
	}
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
	do("run", key("r"),
		until(`document.querySelector("#status").textContent.includes("running") && document.querySelector("#timeline svg .tl-belief") !== null`))
	liveSeen := eval(`document.querySelector("#verdict") === null`)
	do("the verdict", chromedp.WaitVisible(chromedp.CSS(`#verdict`)), chromedp.ScrollIntoView(chromedp.CSS(`#verdict`)))
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
