package cli

// findings_subjects.go: the locks sim findings plays (every registered
// lock and every client program's), which --only and --shard keep, and
// how to mend a program that cannot start.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/findings"
	"github.com/locksim/locksim/protocol"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sharding"
)

// subject is a lock sim findings plays: registered, or a program's.
type subject struct {
	findings.Subject
	backend clients.Backend
	// hello is the program's hello line (nil: locksim's own lock).
	hello *protocol.Hello
	// err is why a program could not be read (its hello); nothing of it
	// is played.
	err error
}

// problem says why a story cannot be played by s's client program (as
// matrix.Plan takes it); nil for locksim's own lock.
func (s *subject) problem() func(*scenarios.Scenario) error {
	if s.hello == nil {
		return nil
	}
	argv, h := s.Program, *s.hello
	return func(sc *scenarios.Scenario) error { return runner.ClientProgramProblem(sc, argv, h) }
}

// subjects lists every registered lock that is not a mutant, then every
// lock of every client program under dir (none when dir is ""). Every
// shard of a sharded run lists them alike.
func subjects(ctx context.Context, dir string) ([]subject, error) {
	var out []subject
	for _, n := range clients.Names() {
		s := clients.Registered(n)
		if s.Mutant != "" || strings.HasPrefix(n, "test-") {
			continue
		}
		out = append(out, subject{Subject: findings.Subject{Name: n, Lock: n, About: s.Doc, Servers: string(s.Backend), Promises: s.Promises}, backend: s.Backend})
	}
	if dir == "" {
		return out, nil // --examples '': no client program
	}
	progs, err := clientPrograms(dir)
	if err != nil {
		return nil, err
	}
	for _, argv := range progs {
		folder := filepath.Base(filepath.Dir(argv[len(argv)-1]))
		h, err := runner.ProbeClientProgram(ctx, argv)
		if err != nil {
			out = append(out, subject{Subject: findings.Subject{Name: folder, Program: argv, About: "could not be started"}, err: err})
			continue
		}
		for _, l := range h.Locks {
			spec, err := clients.Lookup(l)
			if err != nil {
				continue
			}
			name := folder
			if len(h.Locks) > 1 {
				name = fmt.Sprintf("%s (%s)", folder, l)
			}
			about := h.Name
			if own := h.OwnName(l); own != "" {
				about = fmt.Sprintf("%s: its own lock %s, like %s", h.Name, own, l)
			}
			out = append(out, subject{Subject: findings.Subject{Name: name, Lock: l, Program: argv, About: about, Servers: string(spec.Backend), Promises: h.Promises, Patched: h.Patched}, backend: spec.Backend, hello: &h})
		}
	}
	return out, nil
}

// clientPrograms finds the client programs under dir: each folder's
// client.js (run by node), client.py or executable client.
func clientPrograms(dir string) ([][]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--examples %s: %v", dir, err)
	}
	var out [][]string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, c := range []struct{ file, run string }{{"client.js", "node"}, {"client.py", ""}, {"client", ""}} {
			p := filepath.Join(dir, e.Name(), c.file)
			if st, err := os.Stat(p); err != nil || st.IsDir() {
				continue
			}
			if c.run != "" {
				out = append(out, []string{c.run, p})
			} else {
				out = append(out, []string{p})
			}
			break
		}
	}
	return out, nil
}

// only keeps the subjects --only names, and refuses a name none has.
func only(all []subject, names []string) ([]subject, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []subject
	for _, n := range names {
		hit := false
		for _, s := range all {
			if s.Named(n) {
				hit = true
				if !slices.ContainsFunc(out, func(o subject) bool { return o.Name == s.Name }) {
					out = append(out, s)
				}
			}
		}
		if !hit {
			var names []string
			for _, s := range all {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("--only %s: no lock or client program of that name (%s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// ofShard keeps the subjects shard plays, which every shard computes
// alike (all of them for no shard): with times (a row's seconds by its
// name) the subjects are dealt out by them, longest first
// (sharding.Balance; a subject without a time weighs their mean); with
// none, every Nth of the list.
func ofShard(subs []subject, shard sharding.Shard, times map[string]float64) []subject {
	var of []int
	if len(times) > 0 {
		mean := 0.0
		for _, t := range times {
			mean += t / float64(len(times))
		}
		w := make([]float64, len(subs))
		for i, s := range subs {
			w[i] = mean
			if t, ok := times[s.Name]; ok {
				w[i] = t
			}
		}
		of = sharding.Balance(w, shard.N)
	}
	var out []subject
	for i, s := range subs {
		if (of == nil && shard.Has(i)) || (of != nil && of[i] == shard.I-1) {
			out = append(out, s)
		}
	}
	return out
}

// rowTimes reads the rows' times of the findings page path (.json), by
// subject name, for --balance.
func rowTimes(path string) (map[string]float64, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--balance %s: %v", path, errors.Unwrap(err))
	}
	r, err := findings.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--balance %s: not a findings .json locksim wrote", path)
	}
	times := map[string]float64{}
	for _, s := range r.Subjects {
		if s.Seconds > 0 {
			times[s.Name] = s.Seconds
		}
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("--balance %s: no row of it has a time (its rows' seconds): expected a page sim findings wrote", path)
	}
	return times, nil
}

// mendHint says why a client program could not start, and how to mend
// it where the cure is known: a Node.js program whose folder has a
// package.json but no node_modules needs its packages installed.
func mendHint(argv []string, err error) string {
	if len(argv) > 0 {
		dir := filepath.Dir(argv[len(argv)-1])
		_, pkg := os.Stat(filepath.Join(dir, "package.json"))
		_, mods := os.Stat(filepath.Join(dir, "node_modules"))
		if pkg == nil && mods != nil {
			return fmt.Sprintf("its npm packages are not installed: run npm ci --prefix %s (or make test-deps)", dir)
		}
	}
	return fmt.Sprintf("its program could not start (%v)", err)
}

// programStories are the stories a client program's folder keeps for it
// (examples/tooz/*.yaml): those whose client_cmd runs argv, each a
// finding about its library told as a story. They are played as the
// catalogue's are, against the reference, which plays them with the
// harness's own worker. None for locksim's own lock (argv nil).
func programStories(argv []string) ([]*scenarios.Scenario, error) {
	if argv == nil {
		return nil, nil
	}
	prog, err := filepath.Abs(argv[len(argv)-1])
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(argv[len(argv)-1]), "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*scenarios.Scenario
	for _, f := range files {
		sc, err := scenarios.Find(f)
		if err != nil {
			return nil, err // the file's own line: a broken example story
		}
		if n := len(sc.ClientCmd); n > 0 {
			if p, err := filepath.Abs(sc.ClientCmd[n-1]); err == nil && p == prog {
				out = append(out, sc)
			}
		}
	}
	return out, nil
}
