package nemesis

import (
	"context"
	"fmt"
	"strings"
)

// Partition cuts one client off from some nodes: every byte on those links
// is dropped in both directions and no connection is closed, as in a real
// partition, so the client's requests time out. The client's links to the
// other nodes are untouched.
type Partition struct {
	Client int
	Nodes  []string
}

const partitionToxic = "partition"

func (f *Partition) Name() string   { return "partition" }
func (f *Partition) On() string     { return fmt.Sprintf("client %d -> %s", f.Client, strings.Join(f.Nodes, ",")) }
func (f *Partition) Detail() string { return "packets dropped both ways" }

func (f *Partition) Inject(ctx context.Context, t *Target) error {
	for _, n := range f.Nodes {
		l, err := t.link(f.Client, n)
		if err != nil {
			return err
		}
		for _, stream := range []string{"upstream", "downstream"} {
			// timeout 0: drop data and never close the connection.
			if err := l.AddToxic(partitionToxic+"-"+stream, "timeout", stream, map[string]any{"timeout": 0}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *Partition) Heal(ctx context.Context, t *Target) error {
	for _, n := range f.Nodes {
		l, err := t.link(f.Client, n)
		if err != nil {
			return err
		}
		for _, stream := range []string{"upstream", "downstream"} {
			if err := l.RemoveToxic(partitionToxic + "-" + stream); err != nil {
				return err
			}
		}
	}
	return nil
}
