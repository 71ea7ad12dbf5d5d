// html.go writes report.html: one self-contained page per run (inline CSS
// and SVG, no script, nothing fetched) with the verdict in one sentence,
// the scenario's explanation, the evidence, the timeline and the history.
// It is built with html/template, so every string from a history or a
// scenario is escaped; the one piece of trusted markup is the timeline's
// SVG, whose strings svg.go escapes itself.

package reports

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/runner"
)

// MaxHTMLEvents bounds the rows of the history table; history.jsonl has
// them all.
const MaxHTMLEvents = 5000

// EvidenceLines is the evidence as plain text lines, for JUnit and
// terminals.
func EvidenceLines(c checker.Result) []string {
	var out []string
	for _, f := range c.Findings() {
		line := f.Kind + ": " + f.Sentence
		var evs []string
		for _, e := range f.Events {
			if e.Seq != 0 {
				evs = append(evs, EventLine(e))
			}
		}
		if len(evs) > 0 {
			line += "\n    " + strings.Join(evs, "\n    ")
		}
		out = append(out, line)
	}
	return out
}

// EventLine is one event as one line of text.
func EventLine(e history.Event) string {
	who := "harness"
	if e.Process > 0 {
		who = fmt.Sprintf("client %d", e.Process)
	}
	s := fmt.Sprintf("#%d %s %s %s %s", e.Seq, secs(e.Time), who, e.Op, e.Type)
	if d := EventDetail(e); d != "" {
		s += " (" + d + ")"
	}
	return s
}

type htmlRow struct {
	history.Event
	Who, Detail string
	T           string
	Evidence    bool
}

type htmlFact struct{ Q, A string }

type htmlPage struct {
	Run        *runner.Outcome
	Verdict    checker.Verdict
	Matches    bool
	Summary    string
	Facts      []htmlFact
	Meta       []htmlFact
	Explain    []string
	Findings   []checker.Finding
	Timeline   template.HTML
	Rows       []htmlRow
	MoreEvents int
	Generated  string
}

// WriteHTML writes the run's report.html to w; tl is its timeline.
func WriteHTML(w io.Writer, r *runner.Outcome, tl *Timeline) error {
	c := r.Check
	p := htmlPage{
		Run: r, Verdict: c.Verdict, Matches: r.Matches(), Summary: c.Summary,
		Findings:  c.Findings(),
		Timeline:  template.HTML(tl.SVG()), // svg.go escapes every string it draws
		Generated: time.Now().UTC().Format(time.RFC3339),
	}
	p.Facts = facts(c)
	p.Meta = []htmlFact{
		{"lock", r.Scenario.Lock},
		{"fault", r.Scenario.Fault},
		{"expected", string(r.Expected)},
		{"seed", fmt.Sprint(r.Seed)},
		{"duration", r.Duration.Round(time.Millisecond).String()},
		{"events", fmt.Sprint(len(r.Events))},
	}
	if m := MachineLine(r.Machine); m != "" {
		p.Meta = append(p.Meta, htmlFact{"machine", m})
	}
	for _, para := range strings.Split(strings.TrimSpace(r.Scenario.Explain), "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			p.Explain = append(p.Explain, para)
		}
	}
	ev := map[int64]bool{}
	for _, f := range p.Findings {
		for _, e := range f.Events {
			ev[e.Seq] = true
		}
	}
	for i, e := range r.Events {
		if i >= MaxHTMLEvents {
			p.MoreEvents = len(r.Events) - i
			break
		}
		who := "harness"
		if e.Process > 0 {
			who = fmt.Sprintf("client %d", e.Process)
		}
		p.Rows = append(p.Rows, htmlRow{Event: e, Who: who, Detail: EventDetail(e), T: fmt.Sprintf("%.3f", float64(e.Time)/1e9), Evidence: ev[e.Seq]})
	}
	return reportTemplate.Execute(w, p)
}

// facts answers the questions a reader asks first, each checker's outcome
// in a few words: was the lock violated, was the data damaged.
func facts(c checker.Result) []htmlFact {
	yesno := func(n int, yes, no string) string {
		if n > 0 {
			return fmt.Sprintf(yes, n)
		}
		return no
	}
	skipped := func(outcome, why, no string) string {
		switch outcome {
		case checker.OutcomeSkipped:
			return why
		case checker.OutcomeUnknown:
			return "unknown: the check timed out"
		}
		return no
	}
	return []htmlFact{
		{"Did two clients hold the lock at once?", yesno(c.Mutex.OverlapCount, "yes: %d overlapping hold(s)", skipped(c.Mutex.Outcome, "no lock was granted", "no"))},
		{"Was the protected data damaged?", yesno(c.Damage.LostUpdateCount+c.Damage.StaleWriteCount, "yes: %d lost or stale write(s)", skipped(c.Damage.Outcome, "no write in this story", "no"))},
		{"Did the fence refuse stale writes?", yesno(c.Fencing.Refused, "yes: %d refused", skipped(c.Fencing.Outcome, "no fencing token in this story", "none refused"))},
		{"Did a fencing token go backwards?", yesno(c.Fencing.BackwardsCount, "yes: %d time(s)", "no")},
		{"Was the lock left held with no live holder, or unavailable too long (max_gap)?", yesno(c.Liveness.LeakCount+len(c.Liveness.Stalls), "yes: %d finding(s)", skipped(c.Liveness.Outcome, "no acquire in this story", "no"))},
	}
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"secsOf": func(t int64) float64 { return float64(t) / 1e9 },
	"who": func(p int) string {
		if p == 0 {
			return "harness"
		}
		return fmt.Sprintf("client %d", p)
	},
	"detail": EventDetail,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>locksim: {{.Run.Scenario.Name}} — {{.Verdict}}</title>
<style>
:root { --fg:#111827; --muted:#6b7280; --line:#e5e7eb; --bad:#dc2626; --ok:#059669; --warn:#d97706; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; color: var(--fg); background: #f9fafb; }
main { max-width: 1260px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 2px; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
h1 small { font: 500 14px system-ui, sans-serif; color: var(--muted); margin-left: 8px; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.subtitle { color: #374151; font-size: 17px; margin: 0 0 18px; }
.verdict { border-radius: 10px; padding: 16px 20px; border: 1px solid; display: flex; gap: 18px; align-items: center; background: #fff; }
.verdict .badge { font: 800 20px/1 system-ui, sans-serif; letter-spacing: .06em; text-transform: uppercase; padding: 10px 14px; border-radius: 8px; color: #fff; white-space: nowrap; }
.verdict p { margin: 0; font-size: 16px; }
.verdict .expect { color: var(--muted); font-size: 14px; margin-top: 4px; }
.v-unsafe { border-color: #fecaca; } .v-unsafe .badge { background: var(--bad); }
.v-safe { border-color: #a7f3d0; } .v-safe .badge { background: var(--ok); }
.v-leaked, .v-hung { border-color: #fde68a; } .v-leaked .badge, .v-hung .badge { background: var(--warn); }
.v-unknown { border-color: var(--line); } .v-unknown .badge { background: var(--muted); }
.mismatch { color: var(--bad); font-weight: 700; }
.grid { display: grid; grid-template-columns: 1.3fr 1fr; gap: 24px; margin-top: 18px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 18px; }
.card h3 { margin: 0 0 8px; font-size: 15px; }
dl.facts { display: grid; grid-template-columns: auto auto; gap: 4px 14px; margin: 0; }
dl.facts dt { color: #374151; } dl.facts dd { margin: 0; font-weight: 600; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted); font-size: 14px; margin-top: 10px; }
.meta b { color: var(--fg); font-weight: 600; }
.explain p { margin: 0 0 10px; }
.source { color: var(--muted); font-size: 14px; }
.timeline-wrap { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 8px; overflow-x: auto; }
.timeline-wrap svg { display: block; max-width: 100%; height: auto; }
.finding { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--bad); border-radius: 8px; padding: 10px 14px; margin-bottom: 10px; }
.finding.good { border-left-color: var(--ok); }
.finding .kind { font-weight: 700; text-transform: uppercase; font-size: 12px; letter-spacing: .05em; color: var(--bad); }
.finding.good .kind { color: var(--ok); }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
tr.evidence td { background: #fef2f2; }
tr.t-fault td, tr.t-heal td { color: #b45309; } tr.t-note td { color: var(--muted); font-style: italic; }
.type-fail { color: var(--bad); font-weight: 600; } .type-info { color: var(--warn); font-weight: 600; }
ul.links { padding-left: 20px; } code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 90%; }
footer { margin-top: 32px; color: var(--muted); font-size: 13px; }
@media (max-width: 900px) { .grid { grid-template-columns: 1fr; } }
</style>
</head>
<body>
<main>
<h1 id="name">{{.Run.Scenario.Name}}<small>locksim run report</small></h1>
<p class="subtitle" id="title">{{.Run.Scenario.Title}}</p>

<section class="verdict v-{{.Verdict}}" id="verdict">
  <div class="badge">{{.Verdict}}</div>
  <div>
    <p>{{.Summary}}</p>
    {{with .Run.Reference}}<p class="expect" id="reference">{{if $.Matches}}At least as good as the reference <b>{{.Lock}}</b>{{else}}<span class="mismatch">Not as good as the reference {{.Lock}}</span>{{end}}, the same story played with locksim's lock (<a href="reference/report.html">its report</a>): {{.Sentence $.Run}}.</p>
    {{else}}<p class="expect">{{if .Matches}}As expected: this scenario should end <b>{{.Run.Expected}}</b>.{{else}}<span class="mismatch">Not as expected: this scenario should end {{.Run.Expected}}.</span>{{end}}</p>{{end}}
    {{with .Run.Counterfactual}}<p class="expect" id="counterfactual">Counterfactual, {{.Change}}: <b>{{.Verdict}}</b>{{if .Flipped}}. The verdict flips, so the cause is what decided it.{{else}} <span class="mismatch">(it had to flip to {{.Expected}}: the cause did not decide the verdict)</span>{{end}} {{.Summary}}</p>{{end}}
  </div>
</section>

<div class="grid">
  <div class="card explain">
    <h3>What this scenario shows</h3>
    {{range .Explain}}<p>{{.}}</p>{{else}}<p class="source">No explanation recorded for this scenario.</p>{{end}}
    {{with .Run.Scenario.Source}}<p class="source">Source: {{.}}</p>{{end}}
  </div>
  <div class="card">
    <h3>What the checkers found</h3>
    <dl class="facts">{{range .Facts}}<dt>{{.Q}}</dt><dd>{{.A}}</dd>{{end}}</dl>
    <div class="meta">{{range .Meta}}{{if .A}}<span>{{.Q}} <b>{{.A}}</b></span>{{end}}{{end}}</div>
  </div>
</div>

<h2 id="timeline">Timeline</h2>
<div class="timeline-wrap">{{.Timeline}}</div>
<p class="source">Client lanes show the lease as each client believes it, as the checker derives it (from its grant to its release, its lease end, its crash or a renewal that found it gone). Node lanes show the key as each node holds it, derived from the grants, TTLs, releases and faults in the history, not observed on the servers. Hover a shape for its details. The same drawing: <a href="timeline.svg">timeline.svg</a>.</p>

<h2 id="evidence">Evidence</h2>
{{range .Findings}}
<div class="finding{{if not .Bad}} good{{end}}">
  <div class="kind">{{.Kind}}</div>
  <div>{{.Sentence}}</div>
  <table><tr><th>#</th><th>t (s)</th><th>who</th><th>event</th><th>op</th><th>detail</th></tr>
  {{range .Events}}{{if .Seq}}<tr><td class="num">{{.Seq}}</td><td class="num">{{printf "%.3f" (secsOf .Time)}}</td><td>{{who .Process}}</td><td class="type-{{.Type}}">{{.Type}}</td><td>{{.Op}}</td><td>{{detail .}}</td></tr>{{end}}{{end}}
  </table>
</div>
{{else}}<p>No finding: the checkers saw nothing wrong in this history.</p>{{end}}

<h2 id="files">Files in this run directory</h2>
<ul class="links">
  <li><a href="history.html">history.html</a>: porcupine's visualization of the lock's history, with the faults annotated (opens offline).</li>
  <li><a href="timeline.svg">timeline.svg</a>: the timeline above, on its own.</li>
  <li><a href="history.jsonl">history.jsonl</a>: every event; <code>sim check DIR</code> re-checks it, <code>sim report DIR</code> rebuilds these files.</li>
  <li><a href="result.json">result.json</a>, <a href="summary.md">summary.md</a>, <a href="junit.xml">junit.xml</a>.</li>
</ul>

<h2 id="history">History</h2>
<table id="history-table">
<tr><th>#</th><th>t (s)</th><th>who</th><th>event</th><th>op</th><th>key</th><th>detail</th></tr>
{{range .Rows}}<tr class="t-{{.Type}}{{if .Evidence}} evidence{{end}}"><td class="num">{{.Seq}}</td><td class="num">{{.T}}</td><td>{{.Who}}</td><td class="type-{{.Type}}">{{.Type}}</td><td>{{.Op}}</td><td>{{.Key}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{if .MoreEvents}}<p>… and {{.MoreEvents}} more events in history.jsonl.</p>{{end}}

<footer>Generated by locksim at {{.Generated}}. Times are seconds of CLOCK_MONOTONIC since the run began, one clock for every process.</footer>
</main>
</body>
</html>
`))
