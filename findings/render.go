package findings

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"strings"

	"github.com/locksim/locksim/cellkind"
)

// intro says what the page is and how it was made, for both renderings.
const intro = `Each lock below plays every story of its servers, as ` + "`sim matrix`" + ` plays
them. A library's lock (redislock for redis, or a client program's lock, by
its ` + "`like`" + `) is judged against locksim's reference for it, played on the same
story by locksim's own worker: **finding** when it ended unsafe, leaked or hung where
the reference did not. A reference keeps the promises it is compared on and no
others: ` + "`redis`" + ` is the Redis page's single-instance pattern (SET NX PX with a
random token, a token-checked Lua release, no validity check at acquire),
` + "`redlock`" + ` the same page's Redlock (its step 3 checks the validity), and each
registered lock's promises are listed with their sources in clients/promises.go.

A finding counts only where the lock promises what the story tests, in its
library's own words (each story's ` + "`tests:`" + `; each library's promises, quoted
with their addresses, in its program's hello and README): a lock that does
worse on a property it never promised shows ➖ "does not promise", and is not
counted. A story whose fault is outside what real machines have (a clock drift
past 500 ppm, where NTP slews at most 500 ppm: docs/faults.md) teaches, shows
🎓, and is not counted. A program that plays its library as no release installs
it is shown, and nothing of it counted.

Then ` + "`sim hunt`" + ` searches fault schedules against each lock, told nothing but its
name; a library's lock is hunted with its reference as the baseline, so that
what the hunt finds is what it does worse, not the lease trap every lock whose
holder trusts its lease shares (a fencing token protects the data from it, not
the exclusion). The first schedule it finds is shrunk to a story and played
again: "reproduced k of n" counts the runs that ended as the story tells. A
reference is hunted as it is, and its find is named by the catalogue story
that ends the same way under the same faults, or said to be one no catalogue
story tells. locksim's own etcd locks play every etcd version here (Debian's,
the default, and those make test-deps builds), a client program the default
(and the newest build for the stories that move a member's clock); each row
names its version, and a story whose bug a later version fixed says so. Every
cell and every hunt gives the command that plays it again.

Two columns measure what users ask of a lock library most: on a story whose
holder is paused (SIGSTOP) past its lease, and on one whose holder is cut off
from its servers, how long after the servers gave its lock to another client
the holder learned it (by its lease check, its watchdog's renewal, or a command
refused; or never, within the story), and how long two clients both believed
they held the lock.

The cost column is one ` + "`sim cost`" + ` run's (docs/cost.md), named above the
table: each lock's acquire plus release with one client, p50 / p99 in µs,
as a multiple of the floor measured in the same run (one Redis PING,
PostgreSQL SELECT 1, etcd Get, ZooKeeper exists or memcached mn), and the locks per
second of 4 clients contending for one lock. ` + "`sim findings cost DIR`" + ` puts a
run's DIR/cost.json on the page without playing anything again. sim cost
times locksim's own Go locks: a client program's library is not measured.`

// Markdown is the report as docs/findings.md.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("# Findings: what the stories and the hunts show about each lock\n\n")
	fmt.Fprintf(&b, "Rebuilt by `%s`; `bin/sim findings --only NAME` refreshes one lock, when its library\nreleases a new version. Seed %d. %s\n\n", r.Command, r.Seed, r.Machine)
	r.defectsMarkdown(&b)
	b.WriteString("## Libraries\n\nOne line each; its section below has every story, its hunt and its cost.\n\n")
	b.WriteString("| lock | version played | stories played | counted | not counted | hunt |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Subjects {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %d | %d | %d | %s |\n", s.Name, anchor(s.Name), md(r.VersionWords(s)),
			s.Played(), s.Count(cellkind.Finding), s.Count(KindUnpromised)+s.Count(KindUnrealistic), md(s.Hunt.Short()))
	}
	b.WriteString("\n## How this page is made\n\n")
	b.WriteString(intro + "\n\n")
	if src := r.CostSource(); src != "" {
		fmt.Fprintf(&b, "Cost figures from %s.\n\n", src)
	}
	if len(r.Modules) > 0 {
		b.WriteString("The Go locks are built with: " + strings.Join(wrapCode(r.Modules), ", ") + ".\n")
	}
	for _, s := range r.Subjects {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Name)
		fmt.Fprintf(&b, "%s, on %s; played %s in %.0f s%s.\n\n", md(s.About), s.ServersLine(), s.Date, s.Seconds, s.LoadWords())
		if s.Program != nil {
			fmt.Fprintf(&b, "Client program: `%s`, playing the stories of lock `%s`.\n\n", strings.Join(s.Program, " "), s.Lock)
		}
		if nl := r.NewestLine(s); nl != "" {
			b.WriteString("Versions: " + md(nl) + ".\n\n")
		}
		b.WriteString(s.Meaning() + "\n\n")
		if len(s.Promises) > 0 {
			b.WriteString("<details><summary>what it promises, in its own words</summary>\n\n")
			for _, p := range s.Promises {
				fmt.Fprintf(&b, "- %s (`%s`): \"%s\" (%s)\n", p.Property.Says(), p.Property, md(p.Quote), p.Source)
			}
			b.WriteString("\n</details>\n\n")
		} else if s.Program != nil {
			b.WriteString("It declares no promises: every finding about it is shown, and none counted.\n\n")
		}
		b.WriteString("| learns its lock was given away | both believed they held it | cost: acquire+release p50 / p99 (× floor), locks/s |\n| --- | --- | --- |\n")
		fmt.Fprintf(&b, "| %s | %s | %s |\n\n", mdLines(s.NoticeLines()), mdLines(s.OverlapLines()), mdLines(r.CostCell(s)))
		b.WriteString(strings.Join(r.CostSentences(s), " ") + "\n\n")
		b.WriteString("| story | how it ended | play it again |\n| --- | --- | --- |\n")
		for _, c := range s.Cells {
			cmd := ""
			if c.Command != "" {
				cmd = "`" + c.Command + "`"
			}
			fmt.Fprintf(&b, "| %s | %s%s | %s |\n", c.Where(), marks[c.Kind], md(c.Text), cmd)
		}
		if h := s.Hunt; h != nil {
			fmt.Fprintf(&b, "\nHunt%s: `%s`: %s\n", huntOn(h), h.Command, md(huntSentence(h)))
			if h.Story != "" {
				fmt.Fprintf(&b, "\n<details><summary>the story it found (found.yaml)</summary>\n\n```yaml\n%s```\n\n</details>\n", h.Story)
			}
		}
	}
	return b.Bytes()
}

// defectsIntro says what the defects table holds.
const defectsIntro = `Each line is one defect: a promise the library makes, in its own words,
that a story or a hunt shows broken, where the lock it stands in for (locksim's
reference, which keeps that promise and no other) held on the same faults. A
story that tests a property the library never promised is shown in its row below
as "does not promise", and is not counted; nor is a story whose fault is outside
what real machines have (docs/faults.md).`

// defectsMarkdown writes the page's opening table: one line a defect.
func (r *Report) defectsMarkdown(b *bytes.Buffer) {
	b.WriteString("## Defects\n\n" + defectsIntro + "\n\n")
	if len(r.defects) == 0 {
		b.WriteString("No defect: no lock ended worse than its reference on a story that tests what it promises.\n\n")
		return
	}
	for _, part := range []struct {
		title    string
		liveness bool
	}{{"Safety: two holders at once, or the data damaged", false}, {"Liveness: a call that does not return, a lock not freed or not granted", true}} {
		fmt.Fprintf(b, "### %s\n\n", part.title)
		n := 0
		for _, d := range r.defects {
			if d.Property.Liveness() != part.liveness {
				continue
			}
			if n == 0 {
				b.WriteString("| defect | whose | the promise it breaks | in its words | k of n | shown by |\n| --- | --- | --- | --- | --- | --- |\n")
			}
			n++
			words := "(it declares no words for it)"
			if d.Promise.Quote != "" {
				words = fmt.Sprintf("\"%s\" ([source](%s))", md(d.Promise.Quote), d.Promise.Source)
			}
			fmt.Fprintf(b, "| [%s](findings/%s.md) | [%s](#%s) | %s | %s | %s | %s |\n", md(d.Title()), d.Slug(), md(d.Whose()), anchor(d.Shown[0].Subject), d.Property.Says(), words, md(d.KOfN()), md(d.ShownLine()))
		}
		if n == 0 {
			b.WriteString("None.\n")
		}
		b.WriteString("\n")
	}
}

// Defects are the report's defects as Judge last grouped them.
func (r *Report) DefectList() []Defect { return r.defects }

// LoadWords says the machine's load while the subject played, and marks
// a busy one: " at load 0.4 (2 cores)", " at load 7.9 on 2 cores: BUSY,
// its timings are not an idle machine's"; "" when not recorded.
func (s Subject) LoadWords() string {
	switch {
	case s.Cores == 0:
		return ""
	case s.Busy():
		return fmt.Sprintf(" at load %.1f on %d cores: BUSY, its timings are not an idle machine's", s.Load, s.Cores)
	}
	return fmt.Sprintf(" at load %.1f (%d cores)", s.Load, s.Cores)
}

// marks are the Markdown's signs for a cell's kind: sim matrix's, and
// one for a cell not counted.
var marks = func() map[string]string {
	m := maps.Clone(cellkind.Marks)
	m[KindUnrealistic] = "🎓 "
	m[KindUnpromised] = "➖ "
	return m
}()

// Word says a hunt's result in a few words, as the page's table and sim
// findings' lines give it; detail adds what a finding was.
func (h *Hunt) Word(detail bool) string {
	w := h.word(detail)
	if h != nil && h.Found && h.Error == "" && h.Reproduced != "" {
		w += "; " + h.Reproduced
	}
	if h != nil && h.NotCounted != "" {
		w += " (not counted: " + h.NotCounted + ")"
	}
	return w
}

func (h *Hunt) word(detail bool) string {
	switch {
	case h == nil:
		return "not run"
	case h.Error != "":
		return "could not run"
	case h.Found && h.Baseline != "" && detail:
		return fmt.Sprintf("worse than %s in %d candidates: %s", h.Baseline, h.Runs, h.Summary)
	case h.Found && h.Baseline != "":
		return fmt.Sprintf("worse than %s: %s (%d candidates)", h.Baseline, h.worseLine(), h.Runs)
	case h.Found && h.Trap != "":
		return fmt.Sprintf("%s, which every lock whose holder trusts its lease shares (%d candidates)", h.Trap, h.Runs)
	case h.Found && h.ToldBy != "" && h.Schedule != "":
		return fmt.Sprintf("the schedule of %s: %s (%d candidates)", h.ToldBy, h.Schedule, h.Runs)
	case h.Found && h.Untold && h.Schedule != "":
		return fmt.Sprintf("a schedule no catalogue story tells: %s (%d candidates)", h.Schedule, h.Runs)
	case h.Found && h.Schedule != "" && detail:
		return fmt.Sprintf("found in %d candidates, %s: %s", h.Runs, h.Schedule, h.Summary)
	case h.Found && h.Schedule != "":
		return fmt.Sprintf("found: %s (%d candidates)", h.Schedule, h.Runs)
	case h.Found && detail:
		return fmt.Sprintf("found in %d candidates: %s", h.Runs, h.Summary)
	case h.Found:
		return fmt.Sprintf("found (%d candidates)", h.Runs)
	case h.Unsteady != "" && h.Baseline != "":
		return fmt.Sprintf("nothing steadily worse than %s in %d candidates (one find %s: not counted)", h.Baseline, h.Runs, h.unsteadyCount())
	case h.Unsteady != "":
		return fmt.Sprintf("nothing steady in %d candidates (one find %s: not counted)", h.Runs, h.unsteadyCount())
	case h.Baseline != "":
		return fmt.Sprintf("nothing worse than %s in %d candidates", h.Baseline, h.Runs)
	}
	return fmt.Sprintf("nothing in %d candidates", h.Runs)
}

// worseLine says in one line what a differential hunt found: the
// verdict its summary opens with, and the faults of its shrunk story
// where the hunt kept them ("leaked under drop on client 1 (links A)
// once client 1 is granted").
func (h *Hunt) worseLine() string {
	verdict, _, ok := strings.Cut(h.Summary, ":")
	if !ok || strings.ContainsAny(verdict, " ,") {
		verdict = "a worse verdict"
	}
	if h.Schedule != "" {
		return verdict + " under " + h.Schedule
	}
	return verdict
}

func huntWord(h *Hunt) string { return h.Word(false) }

// huntOn names the server the hunt ran on (" on etcd 3.4.23"), when it
// names one.
func huntOn(h *Hunt) string {
	if h.Server == "" {
		return ""
	}
	return " on " + h.Server
}

// unsteadyCount is the "reproduced k of n" of an Unsteady find.
func (h *Hunt) unsteadyCount() string {
	count, _, _ := strings.Cut(h.Unsteady, ":")
	return count
}

func huntSentence(h *Hunt) string {
	switch {
	case h.Error != "":
		return "could not run: " + h.Error
	case h.Unsteady != "":
		return fmt.Sprintf("nothing steady after %d candidate(s), %.0f s: one find %s, not counted", h.Runs, h.Seconds, h.Unsteady)
	case h.Found && h.Reproduced != "":
		return fmt.Sprintf("found after %d candidate(s), %.0f s, %s: %s", h.Runs, h.Seconds, h.Reproduced, h.Summary)
	case h.Found:
		return fmt.Sprintf("found after %d candidate(s), %.0f s: %s", h.Runs, h.Seconds, h.Summary)
	}
	return fmt.Sprintf("nothing found in %d candidate(s), %.0f s", h.Runs, h.Seconds)
}

// anchor is GitHub's anchor of a heading.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// md makes s safe in a Markdown table cell.
func md(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// mdLines is lines in one Markdown table cell, a line each.
func mdLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = md(l)
	}
	return strings.Join(out, "<br>")
}

func wrapCode(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return out
}

// HTML is the report as findings.html: the same content, one page, no
// asset fetched.
func (r *Report) HTML() ([]byte, error) {
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		*Report
		Intro        string
		DefectsIntro string
		CostSource   string
	}{Report: r, Intro: strings.ReplaceAll(strings.ReplaceAll(intro, "**", ""), "`", ""), DefectsIntro: strings.ReplaceAll(defectsIntro, "\n", " "),
		CostSource: strings.ReplaceAll(r.CostSource(), "`", "")})
	return b.Bytes(), err
}

var page = template.Must(template.New("findings").Funcs(template.FuncMap{
	"anchor": anchor, "hunt": huntSentence, "plain": func(s string) string { return strings.ReplaceAll(s, "`", "") }, "huntWord": huntWord, "huntOn": huntOn, "join": strings.Join,
	"played":    Subject.Played,
	"uncounted": func(s Subject) int { return s.Count(KindUnpromised) + s.Count(KindUnrealistic) },
	"cellWord":  Cell.Word,
	"cellCSS":   func() template.CSS { return cellkind.CSS },
	"parts": func() []struct {
		Title    string
		Liveness bool
	} {
		return []struct {
			Title    string
			Liveness bool
		}{{"Safety: two holders at once, or the data damaged", false}, {"Liveness: a call that does not return, a lock not freed or not granted", true}}
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>locksim findings</title>
<style>
body { font: 16px/1.45 system-ui, sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top; text-align: left; }
code, pre { font: 13px/1.4 ui-monospace, monospace; } pre { background: #f6f6f6; padding: .8em; overflow-x: auto; }
{{cellCSS}}
</style></head><body>
<h1>Findings: what the stories and the hunts show about each lock</h1>
<p>Rebuilt by <code>{{.Command}}</code>; <code>bin/sim findings --only NAME</code> refreshes one lock. Seed {{.Seed}}. {{.Machine}}</p>
<h2>Defects</h2>
<p>{{.DefectsIntro}}</p>
{{if .DefectList}}{{range $part := parts}}<h3>{{$part.Title}}</h3>
<table><tr><th>defect</th><th>whose</th><th>the promise it breaks</th><th>in its words</th><th>k of n</th><th>shown by</th></tr>
{{range $.DefectList}}{{if eq .Property.Liveness $part.Liveness}}<tr><td><a href="findings/{{.Slug}}.md">{{.Title}}</a></td><td><a href="#{{anchor (index .Shown 0).Subject}}">{{.Whose}}</a></td><td>{{.Property.Says}}</td><td>{{with .Promise.Quote}}“{{.}}” {{end}}{{with .Promise.Source}}(<a href="{{.}}">source</a>){{end}}</td><td>{{.KOfN}}</td><td>{{.ShownLine}}</td></tr>
{{end}}{{end}}</table>{{end}}{{else}}<p>No defect: no lock ended worse than its reference on a story that tests what it promises.</p>{{end}}
<h2>Libraries</h2>
<p>One line each; its section below has every story, its hunt and its cost.</p>
<table><tr><th>lock</th><th>version played</th><th>stories played</th><th>counted</th><th>not counted</th><th>hunt</th></tr>
{{range .Subjects}}<tr><td><a href="#{{anchor .Name}}">{{.Name}}</a></td><td>{{$.VersionWords .}}</td><td>{{played .}}</td><td>{{.Count "finding"}}</td><td>{{uncounted .}}</td><td><details><summary>{{.Hunt.Short}}</summary>{{huntWord .Hunt}}</details></td></tr>
{{end}}</table>
<h2>How this page is made</h2>
<p>{{.Intro}}</p>
{{if .CostSource}}<p>Cost figures from {{.CostSource}}.</p>{{end}}
{{if .Modules}}<p>The Go locks are built with: {{join .Modules ", "}}.</p>{{end}}
{{range .Subjects}}<h2 id="{{anchor .Name}}">{{.Name}}</h2>
<p>{{.About}}, on {{.ServersLine}}; played {{.Date}} in {{printf "%.0f" .Seconds}} s{{.LoadWords}}.{{if .Program}} Client program: <code>{{join .Program " "}}</code>, playing the stories of lock <code>{{.Lock}}</code>.{{end}}</p>
{{with $.NewestLine .}}<p>Versions: {{.}}.</p>{{end}}
<p>{{.Meaning}}</p>
{{with .Promises}}<details><summary>what it promises, in its own words</summary><ul>{{range .}}<li>{{.Property.Says}} (<code>{{.Property}}</code>): “{{.Quote}}” ({{.Source}})</li>{{end}}</ul></details>{{end}}
<table><tr><th>learns its lock was given away</th><th>both believed they held it</th><th>cost: acquire+release p50 / p99 (× floor), locks/s</th></tr>
<tr><td>{{range $i, $l := .NoticeLines}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td><td>{{range $i, $l := .OverlapLines}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td><td>{{range $i, $l := $.CostCell .}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td></tr></table>
<p>{{range $.CostSentences .}}{{plain .}} {{end}}</p>
<table><tr><th>story</th><th>how it ended</th><th>play it again</th></tr>
{{range .Cells}}<tr><td>{{.Where}}</td><td class="{{.Kind}}"><details><summary>{{cellWord .}}</summary>{{.Text}}</details></td><td>{{with .Command}}<code>{{.}}</code>{{end}}</td></tr>
{{end}}</table>
{{with .Hunt}}<p>Hunt{{huntOn .}}: <code>{{.Command}}</code>: {{hunt .}}</p>{{if .Story}}<details><summary>the story it found (found.yaml)</summary><pre>{{.Story}}</pre></details>{{end}}{{end}}
{{end}}</body></html>
`))
