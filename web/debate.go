package web

// debate.go: the claims of the debate page, kept as data (debate.yaml,
// embedded), each with its quotation, its address and the stories that
// show it.

import (
	_ "embed"
	"fmt"

	"go.yaml.in/yaml/v3"
)

//go:embed debate.yaml
var debateYAML []byte

// Side is one column of the debate page.
type Side struct {
	// ID names the side in a claim (kleppmann, antirez, redis, seeds).
	ID string `yaml:"id" json:"id"`
	// Title heads the column.
	Title string `yaml:"title" json:"title"`
	// Who is the text the column's claims come from, unless a claim names
	// its own Source.
	Who string `yaml:"who" json:"who"`
}

// Claim is one point of the debate.
type Claim struct {
	// Side is the ID of the column it sits in.
	Side string `yaml:"side" json:"side"`
	// Claim is the page's heading for the point, in locksim's words.
	Claim string `yaml:"claim" json:"claim"`
	// Quote is the passage quoted word for word, as a story's source
	// field or docs/workshop.md quotes it; Summary is the catalogue's
	// own wording of a passage it does not quote. One of the two is set.
	Quote   string `yaml:"quote" json:"quote,omitempty"`
	Summary string `yaml:"summary" json:"summary,omitempty"`
	// Source is the text quoted, when not the side's Who.
	Source string `yaml:"source" json:"source,omitempty"`
	// Section is the section of the source the passage is in ("" when the
	// catalogue does not name it).
	Section string `yaml:"section" json:"section,omitempty"`
	// Address is the source's address ("" when not known).
	Address string `yaml:"address" json:"address,omitempty"`
	// Stories are the catalogue's stories that show the point.
	Stories []string `yaml:"stories" json:"stories"`
}

// Debate is the debate page's data.
type Debate struct {
	Sides  []Side  `yaml:"sides" json:"sides"`
	Claims []Claim `yaml:"claims" json:"claims"`
}

// LoadDebate reads the embedded claims and checks their shape: every
// claim on a known side, with a quote or a summary and at least one
// story. That the quotations are the catalogue's is a test's job
// (TestDebateQuotesAreTheCatalogues).
func LoadDebate() (*Debate, error) {
	var d Debate
	if err := yaml.Unmarshal(debateYAML, &d); err != nil {
		return nil, fmt.Errorf("debate.yaml: %w", err)
	}
	sides := map[string]bool{}
	for _, s := range d.Sides {
		sides[s.ID] = true
	}
	for i, c := range d.Claims {
		switch {
		case !sides[c.Side]:
			return nil, fmt.Errorf("debate.yaml: claim %d (%q): unknown side %q", i+1, c.Claim, c.Side)
		case (c.Quote == "") == (c.Summary == ""):
			return nil, fmt.Errorf("debate.yaml: claim %d (%q): needs a quote or a summary, not both", i+1, c.Claim)
		case len(c.Stories) == 0:
			return nil, fmt.Errorf("debate.yaml: claim %d (%q): no story shows it", i+1, c.Claim)
		}
	}
	return &d, nil
}
