// svg.go draws a Timeline as SVG in the manner of the diagrams of Martin
// Kleppmann's "How to do distributed locking" (2016): time runs left to right, the lock nodes on top, one line per
// client process below them with its lease drawn along it, the storage
// at the bottom with an arrow for every write that reached it. Every
// string from a history or a scenario goes through esc.

package reports

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Layout of the drawing, in SVG pixels.
const (
	svgWidth    = 1200
	svgLabelX   = 12
	svgX0       = 132 // plot area
	svgX1       = svgWidth - 28
	svgNodeH    = 32
	svgClientH  = 92
	svgStorageH = 48
	svgHarnessH = 32
	svgGroupGap = 20
)

// clientColors tells clients apart. Red is kept for the checker's
// evidence and refused writes, green for accepted writes, amber and orange
// for clock and network faults: no client is drawn in them, so a key held
// by client 2 never reads as "write accepted".
var clientColors = []string{"#2563eb", "#7c3aed", "#0891b2", "#db2777", "#854d0e", "#4b5563"}

func clientColor(c int) string {
	if c <= 0 {
		return "#6b7280"
	}
	return clientColors[(c-1)%len(clientColors)]
}

const evidenceColor = "#dc2626"

// esc makes text from a history or a scenario safe as SVG/HTML text or
// attribute value.
func esc(s string) string { return html.EscapeString(s) }

// WriteSVG writes the timeline as a standalone SVG document.
func (t *Timeline) WriteSVG(w io.Writer) error {
	_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+t.SVG())
	return err
}

// SVG returns the timeline as an <svg> element, fit to inline in HTML.
func (t *Timeline) SVG() string {
	d := &drawing{t: t}
	d.layout()
	var b strings.Builder
	d.b = &b
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %d" width="%d" height="%d" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif" font-size="11">`+"\n",
		svgWidth, d.height, svgWidth, d.height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc("Timeline: "+t.Title))
	b.WriteString(`<defs>
<pattern id="tl-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9ca3af" stroke-width="2"/></pattern>
<pattern id="tl-hatch-red" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fef2f2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#fca5a5" stroke-width="2"/></pattern>
<marker id="tl-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#374151"/></marker>
<marker id="tl-arrow-grey" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9ca3af"/></marker>
</defs>
<style>.tl-h { paint-order: stroke; stroke: #ffffff; stroke-width: 4px; stroke-linejoin: round; }</style>
<rect width="100%" height="100%" fill="#ffffff"/>
`)
	d.title()
	d.grid()
	d.lanes()
	d.spans()
	d.marks()
	d.storeArrows()
	d.overlaps()
	d.steps()
	d.axis()
	d.legend()
	d.stepList()
	b.WriteString("</svg>\n")
	return b.String()
}

type drawing struct {
	t      *Timeline
	b      *strings.Builder
	laneY  []int // top of each lane
	laneH  []int
	top    int // first lane's top
	bottom int // last lane's bottom
	stepY  int // the story row's centre
	axisY  int
	height int
	// clientTop and clientBottom bound the client lanes (overlap bands).
	clientTop, clientBottom int
	// placed is, per lane and text row, where the last label ended, so
	// that labels of operations close in time do not print over each other.
	placed map[[2]int]float64
}

// textWidth estimates the width of a label at the drawing's font size.
func textWidth(s string) float64 { return float64(len([]rune(s))) * 6.3 }

// place returns where a label wanted at x goes on a row: right of the
// row's last label, and inside the drawing. ok is false when there is no
// room left (the shape's tooltip still has the text).
func (d *drawing) place(lane, row int, x float64, text string) (at float64, ok bool) {
	if d.placed == nil {
		d.placed = map[[2]int]float64{}
	}
	k := [2]int{lane, row}
	last, seen := d.placed[k]
	if seen && x < last+8 {
		x = last + 8
	}
	w := textWidth(text)
	if x+w > svgWidth-4 {
		x = svgWidth - 4 - w
		if seen && x < last+8 {
			return 0, false
		}
	}
	d.placed[k] = x + w
	return x, true
}

// label draws a text on a lane's row unless the row has no room for it.
func (d *drawing) label(lane, row int, x float64, attrs, text string) {
	if at, ok := d.place(lane, row, x, text); ok {
		d.f(`<text class="tl-h" x="%.1f" y="%d" %s>%s</text>`+"\n", at, row, attrs, esc(text))
	}
}

func (d *drawing) layout() {
	y := 34
	if len(d.t.Steps) > 0 {
		d.stepY = y + 12
		y += 30
	}
	y += 6
	d.top = y
	prev := ""
	d.clientTop, d.clientBottom = -1, -1
	for _, l := range d.t.Lanes {
		if prev != "" && prev != l.Kind {
			y += svgGroupGap
		}
		prev = l.Kind
		h := svgNodeH
		switch l.Kind {
		case LaneClient:
			h = svgClientH
			if d.clientTop < 0 {
				d.clientTop = y
			}
			d.clientBottom = y + h
		case LaneStorage:
			h = svgStorageH
		case LaneHarness:
			h = svgHarnessH
		}
		d.laneY = append(d.laneY, y)
		d.laneH = append(d.laneH, h)
		y += h
	}
	d.bottom = y
	d.axisY = y + 8
	d.height = d.axisY + 28 + 30 + 18*len(d.t.Steps) + 12
}

// x maps a history time to a horizontal position, clamped to the plot.
func (d *drawing) x(t int64) float64 {
	span := float64(d.t.End - d.t.Start)
	if span <= 0 {
		span = 1
	}
	v := svgX0 + float64(t-d.t.Start)/span*(svgX1-svgX0)
	return math.Max(svgX0, math.Min(svgX1, v))
}

func (d *drawing) f(format string, args ...any) { fmt.Fprintf(d.b, format, args...) }

func (d *drawing) title() {
	title := d.t.Title
	if d.t.Clipped {
		title += fmt.Sprintf(" (first %d operations)", MaxTimelineOps)
	}
	d.f(`<text x="%d" y="22" font-size="15" font-weight="600" fill="#111827">%s</text>`+"\n", svgLabelX, esc(title))
}

// tickStep picks a tick interval giving at most about 12 ticks.
func tickStep(span int64) int64 {
	for _, s := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600} {
		if float64(span)/1e9/s <= 12 {
			return int64(s * 1e9)
		}
	}
	return int64(math.Ceil(float64(span)/1e9/12/600) * 600 * 1e9)
}

func (d *drawing) grid() {
	step := tickStep(d.t.End - d.t.Start)
	for t := d.t.Start - d.t.Start%step; t <= d.t.End; t += step {
		if t < d.t.Start {
			continue
		}
		d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#f1f5f9"/>`+"\n", d.x(t), d.top, d.x(t), d.bottom)
	}
}

func (d *drawing) axis() {
	y := d.axisY
	d.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#374151" marker-end="url(#tl-arrow)"/>`+"\n", svgX0, y, svgX1+14, y)
	step := tickStep(d.t.End - d.t.Start)
	for t := d.t.Start - d.t.Start%step; t <= d.t.End; t += step {
		if t < d.t.Start {
			continue
		}
		x := d.x(t)
		d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#374151"/>`, x, y, x, y+5)
		d.f(`<text x="%.1f" y="%d" text-anchor="middle" fill="#374151">%s</text>`+"\n", x, y+17, secondsLabel(t, step))
	}
	d.f(`<text x="%d" y="%d" fill="#6b7280">time (s)</text>`+"\n", svgLabelX, y+17)
}

func secondsLabel(t, step int64) string {
	dec := 0
	for s := step; s%int64(1e9) != 0 && dec < 3; s *= 10 {
		dec++
	}
	return fmt.Sprintf("%.*f s", dec, float64(t)/1e9)
}

func (d *drawing) lanes() {
	for i, l := range d.t.Lanes {
		y, h := d.laneY[i], d.laneH[i]
		fill := "#fafafa"
		if l.Kind == LaneClient {
			fill = "#ffffff"
		}
		d.f(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#e5e7eb"/>`+"\n", svgX0, y, svgX1-svgX0, h, fill)
		mid := d.mid(i)
		name, color, weight := laneTitle(l)
		d.f(`<text x="%d" y="%d" fill="%s" font-size="13" font-weight="%s" dominant-baseline="middle">%s</text>`+"\n", svgLabelX, mid, color, weight, esc(name))
		switch l.Kind {
		case LaneClient:
			d.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#111827" stroke-width="1.5" marker-end="url(#tl-arrow)"/>`+"\n", svgX0, mid, svgX1+14, mid)
		default:
			d.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9ca3af"/>`+"\n", svgX0, mid, svgX1, mid)
		}
	}
}

func laneTitle(l Lane) (name, color, weight string) {
	switch l.Kind {
	case LaneClient:
		return fmt.Sprintf("Client %d", l.Client), clientColor(l.Client), "700"
	case LaneStorage:
		return "Storage", "#111827", "600"
	case LaneHarness:
		return "Faults", "#6b7280", "400"
	}
	switch {
	case l.Name == "pg":
		return "PostgreSQL", "#374151", "600"
	case len(l.Name) == 1 && l.Name[0] >= 'A' && l.Name[0] <= 'Z':
		return "Redis " + l.Name, "#374151", "600"
	}
	return l.Name, "#374151", "600"
}

// mid is a lane's process line.
func (d *drawing) mid(lane int) int {
	if d.t.Lanes[lane].Kind == LaneClient {
		return d.laneY[lane] + 44
	}
	return d.laneY[lane] + d.laneH[lane]/2
}

func (d *drawing) tip(note string) string {
	if note == "" {
		return ""
	}
	return "<title>" + esc(note) + "</title>"
}

func (d *drawing) spans() {
	// Backgrounds first (pauses, crashes), then leases and holds, then
	// the marked faults on top.
	for _, pass := range [][]string{{SpanPause, SpanDown}, {SpanHold, SpanBelief}, {SpanClock, SpanNetwork, SpanFault}} {
		for _, s := range d.t.Spans {
			if s.Lane < 0 || !has(pass, s.Kind) {
				continue
			}
			d.span(s)
		}
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (d *drawing) span(s Span) {
	x0, x1 := d.x(s.From), d.x(s.To)
	w := math.Max(x1-x0, 2)
	y, h := d.laneY[s.Lane], d.laneH[s.Lane]
	mid := d.mid(s.Lane)
	clipped := !s.Open && s.To > d.t.End
	stroke, sw := "", 1.0
	if s.Evidence {
		stroke, sw = evidenceColor, 2
	}
	switch s.Kind {
	case SpanPause, SpanDown:
		fill := "url(#tl-hatch)"
		if s.Kind == SpanDown {
			fill = "url(#tl-hatch-red)"
		}
		d.f(`<rect class="tl-%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="#9ca3af">%s</rect>`+"\n", s.Kind, x0, y+2, w, h-4, fill, d.tip(s.Note))
		d.label(s.Lane, y+13, x0+4, `fill="#4b5563" font-style="italic" font-weight="600"`, s.Label)
	case SpanBelief:
		c := clientColor(s.Client)
		if stroke == "" {
			stroke = c
		}
		d.f(`<rect x="%.1f" y="%d" width="%.1f" height="16" rx="3" fill="#ffffff"/>`, x0, mid-8, w)
		d.f(`<rect class="tl-belief" x="%.1f" y="%d" width="%.1f" height="16" rx="3" fill="%s" fill-opacity="0.18" stroke="%s" stroke-width="%.1f">%s</rect>`+"\n", x0, mid-8, w, c, stroke, sw, d.tip(s.Note))
		d.boxLabels(s, x0, w, mid, c, "600", clipped, fmt.Sprintf("lease until %.2f s →", float64(s.To)/1e9))
	case SpanHold:
		c := clientColor(s.Client)
		if stroke == "" {
			stroke = c
		}
		d.f(`<rect class="tl-hold" x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s" fill-opacity="0.30" stroke="%s" stroke-width="%.1f">%s</rect>`+"\n", x0, y+6, w, h-12, c, stroke, sw, d.tip(s.Note))
		d.boxLabels(s, x0, w, mid, c, "700", clipped, fmt.Sprintf("TTL %.2f s →", float64(s.To)/1e9))
	case SpanClock:
		d.f(`<rect class="tl-clock" x="%.1f" y="%d" width="%.1f" height="%d" fill="#f59e0b" fill-opacity="0.10" stroke="#d97706" stroke-dasharray="4 3">%s</rect>`+"\n", x0, y+2, w, h-4, d.tip(s.Note))
		d.f(`<path d="M%.1f %d l-4 9 h5 l-3 9 l8 -12 h-5 l3 -6 z" fill="#d97706"/>`+"\n", x0+1, y+6)
		d.f(`<text class="tl-h" x="%.1f" y="%d" fill="#b45309" font-weight="700">%s</text>`+"\n", x0+12, y+h-8, esc(s.Label))
	case SpanNetwork:
		d.f(`<rect class="tl-network" x="%.1f" y="%d" width="%.1f" height="5" fill="#f97316" fill-opacity="0.6">%s</rect>`+"\n", x0, y+h-8, w, d.tip(s.Note))
		d.label(s.Lane, y+13, x0+4, `fill="#c2410c" font-style="italic"`, s.Label)
	default:
		d.f(`<rect class="tl-fault" x="%.1f" y="%d" width="%.1f" height="%d" fill="#f87171" fill-opacity="0.15" stroke="#f87171">%s</rect>`+"\n", x0, y+3, w, h-6, d.tip(s.Note))
		d.label(s.Lane, y+13, x0+4, `fill="#b91c1c" font-style="italic"`, s.Label)
	}
}

// boxLabels writes a belief's or a hold's labels: its own at its left,
// and, when the window cuts it (clipped), where it ends at its right.
// Each is written only where it fits inside the box, the label only
// beside the end: a box that has only just begun (a live timeline's
// latest grant) shows neither rather than both over each other.
func (d *drawing) boxLabels(s Span, x0, w float64, mid int, c, weight string, clipped bool, end string) {
	lw, ew := textWidth(s.Label), textWidth(end)
	showEnd := clipped && ew+8 <= w
	showLabel := d.roomFor(s, x0+4+lw) && (!clipped || lw+8 <= w) && (!showEnd || lw+ew+16 <= w)
	if showLabel {
		d.f(`<text class="tl-h" x="%.1f" y="%d" fill="%s" font-weight="%s" dominant-baseline="middle">%s</text>`+"\n", x0+4, mid, c, weight, esc(s.Label))
	}
	if showEnd {
		d.f(`<text x="%.1f" y="%d" fill="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0+w-4, mid, c, end)
	}
}

// roomFor says whether a span's label, ending at end, stays clear of the
// next span of the same kind on its lane (busy generator runs leave the
// label to the tooltip).
func (d *drawing) roomFor(s Span, end float64) bool {
	for _, o := range d.t.Spans {
		if o.Lane == s.Lane && o.Kind == s.Kind && o.From > s.From && d.x(o.From) < end {
			return false
		}
	}
	return true
}

func statusColor(t string) string {
	switch t {
	case "ok":
		return "#111827"
	case "fail":
		return "#b91c1c"
	}
	return "#a16207"
}

func (d *drawing) marks() {
	for _, m := range d.t.Marks {
		if m.Lane < 0 || m.Lane >= len(d.laneY) {
			continue
		}
		y := d.laneY[m.Lane]
		mid := d.mid(m.Lane)
		x0, x1 := d.x(m.From), d.x(m.At)
		w := math.Max(x1-x0, 3)
		tip := fmt.Sprintf("#%d client %d %s (%s) %.3f s → %.3f s", m.Seq, m.Client, m.Kind, m.Status, float64(m.From)/1e9, float64(m.At)/1e9)
		label := m.Label
		color := statusColor(string(m.Status))
		stroke := ""
		if m.Evidence != "" {
			label = "⚠ " + m.Evidence + ": " + label
			color, stroke = evidenceColor, evidenceColor
			tip += " — " + m.Evidence
		}
		switch m.Kind {
		case MarkCrash:
			d.f(`<g class="tl-crash" stroke="%s" stroke-width="3"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>%s</g>`+"\n",
				evidenceColor, x0-6, mid-6, x0+6, mid+6, x0-6, mid+6, x0+6, mid-6, d.tip(tip))
			d.f(`<text x="%.1f" y="%d" fill="%s" font-weight="700">crash</text>`+"\n", x0+8, y+24, evidenceColor)
		case MarkNote:
			d.f(`<path class="tl-note" d="M%.1f %d l4 4 l-4 4 l-4 -4 z" fill="#6b7280">%s</path>`+"\n", x1, mid-4, d.tip(m.Label))
		case MarkWrite:
			fill := "#16a34a"
			switch m.Status {
			case "fail":
				fill = "#dc2626"
			case "info":
				fill = "#ca8a04"
			}
			if stroke == "" {
				stroke = fill
			}
			d.f(`<rect class="tl-write tl-%s" x="%.1f" y="%d" width="%.1f" height="10" fill="%s" fill-opacity="0.35" stroke="%s" stroke-width="%s">%s</rect>`+"\n",
				m.Status, x0, mid+12, w, fill, stroke, strokeWidth(m.Evidence), d.tip(tip))
			if m.Status == "fail" {
				d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dc2626" stroke-width="1.5"/>`+"\n", x0, mid+12, x0+w, mid+22)
			}
			d.label(m.Lane, mid+34, x0, `fill="`+color+`" font-weight="600"`, label)
		case MarkStore:
			c := "#16a34a"
			if m.Status == "fail" {
				c = "#dc2626"
			}
			if m.Evidence != "" {
				d.f(`<circle cx="%.1f" cy="%d" r="9" fill="none" stroke="%s" stroke-width="2"/>`, x1, mid, evidenceColor)
			}
			if m.Status == "fail" {
				d.f(`<g class="tl-refused" stroke="%s" stroke-width="2.5"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>%s</g>`+"\n",
					c, x1-5, mid-5, x1+5, mid+5, x1-5, mid+5, x1+5, mid-5, d.tip(tip))
			} else {
				d.f(`<circle class="tl-stored" cx="%.1f" cy="%d" r="5" fill="%s">%s</circle>`+"\n", x1, mid, c, d.tip(tip))
			}
			d.label(m.Lane, mid+16, x1+8, `fill="`+color+`" font-weight="600"`, label)
		default: // acquire, release, extend
			d.f(`<rect class="tl-op" x="%.1f" y="%d" width="%.1f" height="6" rx="2" fill="%s" fill-opacity="0.55">%s</rect>`+"\n", x0, y+28, w, color, d.tip(tip))
			d.label(m.Lane, y+24, x0, `fill="`+color+`"`, label)
		}
	}
}

func strokeWidth(evidence string) string {
	if evidence != "" {
		return "2.5"
	}
	return "1"
}

// storeArrows draws each write that reached the storage as an arrow from
// the client's line down to the storage's.
func (d *drawing) storeArrows() {
	var storage = -1
	for i, l := range d.t.Lanes {
		if l.Kind == LaneStorage {
			storage = i
		}
	}
	if storage < 0 {
		return
	}
	for _, m := range d.t.Marks {
		if m.Kind != MarkStore {
			continue
		}
		var from = -1
		for i, l := range d.t.Lanes {
			if l.Kind == LaneClient && l.Client == m.Client {
				from = i
			}
		}
		if from < 0 {
			continue
		}
		x := d.x(m.At)
		color := "#9ca3af"
		if m.Evidence != "" {
			color = evidenceColor
		}
		d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="3 3" marker-end="url(#tl-arrow-grey)"/>`+"\n",
			x, d.mid(from)+22, x, d.mid(storage)-7, color)
	}
}

func (d *drawing) overlaps() {
	if d.clientTop < 0 {
		return
	}
	for _, s := range d.t.Spans {
		if s.Kind != SpanOverlap {
			continue
		}
		x0, x1 := d.x(s.From), d.x(s.To)
		d.f(`<rect class="tl-overlap" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.10" stroke="%s" stroke-dasharray="5 3" stroke-width="1.5">%s</rect>`+"\n",
			x0, d.clientTop, math.Max(x1-x0, 2), d.clientBottom-d.clientTop, evidenceColor, evidenceColor, d.tip(s.Note))
		d.f(`<text class="tl-h" x="%.1f" y="%d" fill="%s" font-weight="700" font-size="12">⚠ %s</text>`+"\n", x0, d.clientTop-5, evidenceColor, esc(s.Label))
	}
}

// steps numbers the story's steps on a row above the lanes, shifting a
// number right when it would cover the previous one.
func (d *drawing) steps() {
	lastX := -100.0
	for _, s := range d.t.Steps {
		x := d.x(s.At)
		cx := math.Max(x, lastX+20)
		lastX = cx
		d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9ca3af" stroke-dasharray="2 3"/>`, x, d.stepY+9, x, d.bottom)
		if cx != x {
			d.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9ca3af"/>`, cx, d.stepY+9, x, d.stepY+14)
		}
		d.f(`<g class="tl-step"><circle cx="%.1f" cy="%d" r="9" fill="#111827"/><text x="%.1f" y="%d" fill="#ffffff" font-size="10" font-weight="700" text-anchor="middle" dominant-baseline="central">%d</text>%s</g>`+"\n",
			cx, d.stepY, cx, d.stepY, s.N, d.tip(s.Text))
	}
}

func (d *drawing) legend() {
	y := d.axisY + 42
	x := float64(svgX0)
	item := func(swatch, text string) {
		d.f(`<g transform="translate(%.0f,%d)">%s<text x="26" y="4" dominant-baseline="middle" fill="#374151">%s</text></g>`+"\n", x, y, swatch, esc(text))
		x += 34 + float64(len(text))*5.6
	}
	item(`<rect x="0" y="-4" width="20" height="14" rx="3" fill="#2563eb" fill-opacity="0.18" stroke="#2563eb"/>`, "lease as the client believes it")
	item(`<rect x="0" y="-4" width="20" height="14" rx="2" fill="#2563eb" fill-opacity="0.30" stroke="#2563eb"/>`, "key as the node holds it (derived)")
	item(`<rect x="0" y="-4" width="20" height="14" fill="url(#tl-hatch)" stroke="#9ca3af"/>`, "pause")
	item(`<rect x="0" y="-4" width="20" height="14" fill="#f59e0b" fill-opacity="0.15" stroke="#d97706" stroke-dasharray="4 3"/>`, "clock jump")
	item(`<rect x="0" y="1" width="20" height="5" fill="#f97316" fill-opacity="0.6"/>`, "network fault")
	item(`<rect x="0" y="-2" width="20" height="10" fill="#16a34a" fill-opacity="0.35" stroke="#16a34a"/>`, "write accepted")
	item(`<rect x="0" y="-2" width="20" height="10" fill="#dc2626" fill-opacity="0.35" stroke="#dc2626"/>`, "refused")
	item(`<rect x="0" y="-4" width="20" height="14" fill="#dc2626" fill-opacity="0.10" stroke="#dc2626" stroke-dasharray="5 3"/>`, "checker's evidence")
}

func (d *drawing) stepList() {
	y := d.axisY + 70
	for _, s := range d.t.Steps {
		d.f(`<g transform="translate(%d,%d)"><circle cx="0" cy="0" r="7" fill="#111827"/><text x="0" y="0" fill="#ffffff" font-size="9" font-weight="700" text-anchor="middle" dominant-baseline="central">%d</text><text x="14" y="0" dominant-baseline="central" fill="#111827" font-size="12">%s</text></g>`+"\n",
			svgX0+8, y, s.N, esc(fmt.Sprintf("%.3f s  %s", float64(s.At)/1e9, s.Text)))
		y += 18
	}
}
