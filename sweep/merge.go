package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/locksim/locksim/backends"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/env"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// Description is sweep.json: what a sweep, or one shard of it, played,
// so that Merge can tell whether shards belong to one sweep.
type Description struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	// Param is KEY=FROM..TO; empty, one point at the scenario's pause.
	Param  string `json:"param,omitempty"`
	Points int    `json:"points"`
	Trials int    `json:"trials"`
	// Tries is how many times in all a trial left unknown was played.
	Tries int      `json:"tries"`
	Locks []string `json:"locks"`
	// Servers says, for each lock in Locks' order, what it ran on.
	Servers []Servers `json:"servers,omitempty"`
	// TTL, Duration and Clients are the overrides ("" and 0: none).
	TTL      string `json:"ttl,omitempty"`
	Duration string `json:"duration,omitempty"`
	Clients  int    `json:"clients,omitempty"`
	// Backend is where the servers ran, local or docker; Images the
	// docker host's images as given, by lock backend (none given: the
	// backends' defaults).
	Backend string            `json:"backend"`
	Images  map[string]string `json:"images,omitempty"`
	// Shard of Shards (from 1) when this is one slice of the sweep.
	Shard  int `json:"shard,omitempty"`
	Shards int `json:"shards,omitempty"`
	// MergedFrom lists the shards' directories of a merged sweep.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Version is the sim that wrote it.
	Version string `json:"version,omitempty"`
}

// Servers is what one lock of a sweep ran on: its backend and how many
// of its servers (scenarios.LockNodes: Redis nodes, etcd members; for a
// PostgreSQL lock, its Redis fence's nodes), and its fencing token's
// source ("": none).
type Servers struct {
	Lock    string `json:"lock"`
	Backend string `json:"backend"`
	Nodes   int    `json:"nodes"`
	Fence   string `json:"fence,omitempty"`
}

// Describe is the description of sweeping sc with o, defaults filled in
// as Run plays them.
func Describe(sc *scenarios.Scenario, o Options) Description {
	o, locks, _ := o.resolve(sc)
	d := Description{Scenario: sc.Name, Seed: o.Seed, Points: o.Points, Trials: o.Trials, Tries: o.Tries, Locks: locks,
		Clients: o.Clients, Backend: o.Host.Name, Shard: o.Shard.I, Shards: o.Shard.N}
	for _, l := range locks {
		if v, err := Variant(sc, l); err == nil {
			spec := clients.Registered(v.Lock)
			d.Servers = append(d.Servers, Servers{Lock: l, Backend: string(spec.Backend), Nodes: v.Nodes, Fence: v.Fence})
		}
	}
	if o.Param != nil {
		d.Param = o.Param.String()
	}
	if o.TTL > 0 {
		d.TTL = o.TTL.String()
	}
	if o.Duration > 0 {
		d.Duration = o.Duration.String()
	}
	if d.Backend == "" {
		d.Backend = sc.ServerBackend
	}
	if d.Backend == "" {
		d.Backend = env.HostLocal
	}
	if d.Backend == env.HostDocker {
		for b, img := range o.Host.Images {
			if img != "" {
				if d.Images == nil {
					d.Images = map[string]string{}
				}
				d.Images[string(b)] = img
			}
		}
	}
	return d
}

// WriteDescription writes desc into dir as sweep.json (indented JSON).
func WriteDescription(dir *outdir.Dir, desc Description) error {
	b, err := json.MarshalIndent(desc, "", "  ")
	if err != nil {
		return err
	}
	return dir.WriteFile("sweep.json", append(b, '\n'))
}

// ReadDescription reads a sweep.json.
func ReadDescription(path string) (Description, error) {
	var d Description
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: %v", path, err)
	}
	if d.Scenario == "" || d.Points < 1 || d.Trials < 1 || len(d.Locks) == 0 {
		return d, fmt.Errorf("%s: not a sweep's description (no scenario, points, trials or locks)", path)
	}
	return d, nil
}

// sameSweep lists what shards of one sweep must share, named as in
// sweep.json.
func (d Description) sameSweep() [][2]string {
	same := [][2]string{
		{"scenario", d.Scenario}, {"seed", strconv.FormatInt(d.Seed, 10)}, {"param", d.Param},
		{"points", strconv.Itoa(d.Points)}, {"trials", strconv.Itoa(d.Trials)}, {"tries", strconv.Itoa(d.Tries)}, {"locks", strings.Join(d.Locks, ",")},
		{"ttl", d.TTL}, {"duration", d.Duration}, {"clients", strconv.Itoa(d.Clients)},
		{"backend", d.Backend}, {"servers", d.serversLine()},
	}
	for _, b := range backends.All() {
		same = append(same, [2]string{"images." + string(b.Name()), d.Images[string(b.Name())]})
	}
	return append(same, [2]string{"shards", strconv.Itoa(d.Shards)})
}

// serversLine says Servers in one line: "redsync on 5 redis node(s),
// postgres-session on postgres".
func (d Description) serversLine() string {
	var parts []string
	for _, s := range d.Servers {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, ", ")
}

// String says what the lock ran on: "redsync on 5 redis node(s)",
// "postgres-session+fenced on postgres (fence postgres)"; a PostgreSQL
// lock's nodes are its Redis fence's.
func (s Servers) String() string {
	on := s.Backend
	switch {
	case s.Nodes > 0 && s.Backend == string(clients.PostgresBackend):
		on = fmt.Sprintf("%s and %d %s node(s)", s.Backend, s.Nodes, clients.RedisBackend)
	case s.Nodes > 0:
		on = fmt.Sprintf("%d %s node(s)", s.Nodes, s.Backend)
	}
	if s.Fence != "" {
		on += " (fence " + s.Fence + ")"
	}
	return s.Lock + " on " + on
}

// ShardResult is what one shard wrote: its sweep.json, sweep.csv and
// trials.csv (read into its rows' Each), and
// the directory they are in (errors name it).
type ShardResult struct {
	Dir  string
	Desc Description
	Rows []Row
}

// ReadShard reads what a shard wrote in dir: its sweep.json, sweep.csv
// and trials.csv.
func ReadShard(dir string) (ShardResult, error) {
	s := ShardResult{Dir: dir}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return s, fmt.Errorf("%s: not a directory (name the directories sim sweep --shard wrote)", dir)
	}
	var err error
	if s.Desc, err = ReadDescription(filepath.Join(dir, "sweep.json")); errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%s: no sweep.json (a shard's directory holds sweep.json and sweep.csv)", dir)
	} else if err != nil {
		return s, err
	}
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		return s, fmt.Errorf("%s: no sweep.csv (a shard's directory holds sweep.json and sweep.csv)", dir)
	}
	defer f.Close()
	if s.Rows, err = ReadCSV(f); err != nil {
		return s, fmt.Errorf("%s: %v", filepath.Join(dir, "sweep.csv"), err)
	}
	t, err := os.Open(filepath.Join(dir, "trials.csv"))
	if err != nil {
		return s, fmt.Errorf("%s: no trials.csv (a shard written by an older sim: play it again)", dir)
	}
	defer t.Close()
	if err := ReadTrialsCSV(t, s.Rows); err != nil {
		return s, fmt.Errorf("%s: %v", filepath.Join(dir, "trials.csv"), err)
	}
	return s, nil
}

// Merge joins the shards of one sweep: it checks they share the sweep's
// description and that each shard from 1 to N is there once, then adds up
// their counts row by row (rates are computed from the sums, never
// averaged). It returns the whole sweep's description and rows.
func Merge(shards []ShardResult) (Description, []Row, error) {
	if len(shards) == 0 {
		return Description{}, nil, fmt.Errorf("merge: name the shards' directories")
	}
	first := shards[0]
	var split []sharding.Shard
	var dirs []string
	for _, s := range shards {
		d := s.Desc
		if d.Shards < 1 || d.Shard < 1 || d.Shard > d.Shards {
			return Description{}, nil, fmt.Errorf("%s: not a shard (its sweep.json has no shard I/N: a whole sweep)", s.Dir)
		}
		want := first.Desc.sameSweep()
		for i, f := range d.sameSweep() {
			if f != want[i] {
				return Description{}, nil, fmt.Errorf("%s: %s %q, but %s has %q: not shards of one sweep",
					s.Dir, f[0], f[1], first.Dir, want[i][1])
			}
		}
		if err := checkRows(s, first); err != nil {
			return Description{}, nil, err
		}
		split, dirs = append(split, sharding.Shard{I: d.Shard, N: d.Shards}), append(dirs, s.Dir)
	}
	inOrder, err := sharding.EachOnce(split, dirs, "directories")
	if err != nil {
		return Description{}, nil, err
	}
	rows := make([]Row, len(first.Rows))
	for i := range rows {
		f := first.Rows[i]
		r := Row{Lock: f.Lock, Param: f.Param, Value: f.Value, Resolved: f.Resolved, TTL: f.TTL}
		for _, s := range shards {
			r.add(s.Rows[i])
		}
		if r.Trials != first.Desc.Trials {
			return Description{}, nil, fmt.Errorf("%s at %s=%s: the shards played %d trials, want %d", r.Lock, r.Param,
				r.Value.Format(r.Param), r.Trials, first.Desc.Trials)
		}
		if err := checkEach(&r, first.Desc.Trials); err != nil {
			return Description{}, nil, err
		}
		rows[i] = r
	}
	// The values as --param gave them (0.5ttl rather than the duration it
	// resolved to), for the table.
	if p, err := ParseParam(first.Desc.Param); err == nil {
		values := p.Points(first.Desc.Points)
		for i := range rows {
			rows[i].Value = values[i%len(values)]
		}
	}
	d := first.Desc
	d.Shard, d.Shards, d.MergedFrom = 0, 0, inOrder
	return d, rows, nil
}

// checkRows checks a shard's rows against its description (one row per
// lock and point, locks in order) and against the first shard's (the same
// points, TTLs and values).
func checkRows(s, first ShardResult) error {
	d := s.Desc
	if len(s.Rows) != len(d.Locks)*d.Points {
		return fmt.Errorf("%s: sweep.csv has %d rows, want %d (%d locks x %d points)", s.Dir, len(s.Rows), len(d.Locks)*d.Points, len(d.Locks), d.Points)
	}
	for i, r := range s.Rows {
		f := first.Rows[i]
		switch {
		case r.Lock != d.Locks[i/d.Points]:
			return fmt.Errorf("%s: sweep.csv row %d is lock %s, want %s", s.Dir, i+1, r.Lock, d.Locks[i/d.Points])
		case r.Param != f.Param || r.Resolved != f.Resolved || r.TTL != f.TTL || r.Value.X != f.Value.X:
			return fmt.Errorf("%s: sweep.csv row %d is %s=%s with TTL %v, but %s has %s=%s with TTL %v",
				s.Dir, i+1, r.Param, r.Value.Format(r.Param), r.TTL, first.Dir, f.Param, f.Value.Format(f.Param), f.TTL)
		}
		if r.Trials > d.Trials {
			return fmt.Errorf("%s: sweep.csv row %d has %d trials, more than the sweep's %d", s.Dir, i+1, r.Trials, d.Trials)
		}
	}
	return nil
}
