// Package cellkind names the kinds of cell a lock matrix has (sim matrix,
// sim findings): how a lock's run of a story compares with what the story
// expects and with the lock it is judged against, and the sign and colour
// each is shown with, on every page alike.
package cellkind

// The kinds of cell.
const (
	Match   = "match"
	Differs = "differs"
	Finding = "finding"
	// Peer is a reference lock that ended worse than the story's own
	// lock, another reference: what that design adds.
	Peer    = "peer"
	Story   = "story"
	Unknown = "unknown"
	NA      = "na"
	Error   = "error"
)

// Marks are the signs a Markdown page puts before a cell of each kind.
var Marks = map[string]string{Match: "✅ ", Differs: "❌ ", Finding: "🔎 ", Peer: "⚖️ ", Story: "⚠️ ", Unknown: "❔ ", Error: "💥 ", NA: ""}

// CSS colours a cell of each kind, by its class (the kind) on an HTML page.
const CSS = `.match { background: #e3f4e3; } .differs { background: #f9d6d5; } .finding { background: #fbe3c2; } .peer { background: #e4e8f8; }
.story { background: #fff3c4; } .unknown { background: #eee; } .error { background: #f0c0c0; } .na { color: #888; }`
