package cost

// verdicts.go: the safety side of the chart. Each story, as told (the
// catalogue's expected verdict) or as played (a sim matrix run's
// verdict), is a mark: its verdict under its fault, at the option and
// defence it ran with. A story told on servers or with a defence that
// sim cost does not measure (a fence counted by Redis INCR, an
// idempotency key, two defences at once) has no price here and no mark.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/nemesis"
	"github.com/locksim/locksim/outdir"
	"github.com/locksim/locksim/runner"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/storage"
)

// Mark is one story's verdict where the chart draws it.
type Mark struct {
	Story string `json:"story"`
	// Option is the option's key, Defence the defence it ran with.
	Option  string `json:"option"`
	Defence string `json:"defence"`
	// Fault is the fault kind that causes the story (FaultNone when its
	// cause is no injected fault: work that outlasts the TTL, a pool).
	Fault   string          `json:"fault"`
	Verdict checker.Verdict `json:"verdict"`
}

// FaultNone is the fault of a story whose cause injects none.
const FaultNone = "none"

// The sources of the verdicts.
const (
	// FromCatalogue: each story of the catalogue, with its own lock, at
	// the verdict it expects (TestCatalogue holds every story to it).
	FromCatalogue = "the catalogue's expected verdicts (each story with its own lock)"
	// FromMatrix is the words for a sim matrix directory's runs.
	FromMatrix = "the verdicts of the sim matrix runs in %s"
)

// CatalogueMarks are the catalogue's scripted stories, each at the
// verdict it expects, marked where opts measure them.
func CatalogueMarks(opts []Option) ([]Mark, error) {
	all, err := scenarios.Catalogue()
	if err != nil {
		return nil, err
	}
	var out []Mark
	for _, sc := range all {
		if sc.Generator == nil {
			out = append(out, marksOf(opts, sc, sc.Expected)...)
		}
	}
	return out, nil
}

// MatrixMarks are the runs of a sim matrix directory (DIR/<lock>/<story>,
// each with its result.json and the story as played), each at the
// verdict it ended in, marked where opts measure them. A run that ended
// unknown, or without a verdict, has no mark.
func MatrixMarks(opts []Option, dir string) ([]Mark, error) {
	locks, err := os.ReadDir(dir)
	if err != nil {
		return nil, input.Errorf("matrix", dir, "expected a sim matrix directory (--out of sim matrix): "+errText(err))
	}
	var out []Mark
	runs := 0
	for _, l := range locks {
		if !l.IsDir() {
			continue
		}
		stories, err := os.ReadDir(filepath.Join(dir, l.Name()))
		if err != nil {
			continue
		}
		for _, s := range stories {
			run := filepath.Join(dir, l.Name(), s.Name())
			b, err := os.ReadFile(filepath.Join(run, outdir.ResultFile))
			if errors.Is(err, fs.ErrNotExist) || !s.IsDir() {
				continue
			}
			if err != nil {
				return nil, err
			}
			var res struct {
				Verdict checker.Verdict `json:"verdict"`
			}
			if err := json.Unmarshal(b, &res); err != nil {
				return nil, input.Errorf("matrix", dir, fmt.Sprintf("%s: %v", filepath.Join(run, outdir.ResultFile), err))
			}
			runs++
			file := filepath.Join(run, runner.StoryFile)
			text, err := os.ReadFile(file)
			if err != nil {
				return nil, input.Errorf("matrix", dir, fmt.Sprintf("%s: no %s, the story as played", run, runner.StoryFile))
			}
			sc, err := scenarios.Parse(file, text)
			if err != nil {
				return nil, input.Errorf("matrix", dir, err.Error())
			}
			if slices.Contains(scenarios.Verdicts, res.Verdict) {
				out = append(out, marksOf(opts, sc, res.Verdict)...)
			}
		}
	}
	if runs == 0 {
		return nil, input.Errorf("matrix", dir, "no sim matrix run in it (expected DIR/<lock>/<scenario>/result.json)")
	}
	return out, nil
}

// errText is err without the path the flag already names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// marksOf is story sc, ended in verdict, as marks: one for each fault
// that causes it, at its option and defence; none when opts do not
// measure what it ran with.
func marksOf(opts []Option, sc *scenarios.Scenario, verdict checker.Verdict) []Mark {
	opt := optionOf(opts, sc.Lock, sc.Settings)
	def := defenceOf(sc)
	if opt == "" || def == "" {
		return nil
	}
	var out []Mark
	for _, f := range faultsOf(sc) {
		out = append(out, Mark{Story: sc.Name, Option: opt, Defence: def, Fault: f, Verdict: verdict})
	}
	return out
}

// defenceOf is the defence a story's clients have, as sim cost measures
// it: "" when it has one sim cost does not measure, or more than one.
func defenceOf(sc *scenarios.Scenario) string {
	var ds []string
	switch storage.Mode(sc.Storage) {
	case "", storage.Plain:
	case storage.Fenced:
		spec := clients.Registered(sc.Lock)
		// Measured: the lock's own token, or a PostgreSQL sequence's.
		if sc.Fence != clients.FencePostgres && !(sc.Fence == "" && spec.Fences) {
			return ""
		}
		ds = append(ds, DefenceFenced)
	case storage.TokenCAS:
		ds = append(ds, DefenceTokenCAS)
	default:
		return "" // fenced-write (a mutant), idempotent
	}
	if sc.CheckLease {
		ds = append(ds, DefenceLeaseCheck)
	}
	switch sc.Watchdog {
	case "":
	case "token":
		ds = append(ds, DefenceWatchdog)
	default:
		return "" // the naive PEXPIRE watchdog
	}
	switch len(ds) {
	case 0:
		return DefenceNone
	case 1:
		return ds[0]
	}
	return ""
}

// faultsOf are the fault kinds of the story's cause steps (those its
// counterfactual leaves out), each once; when no step is a cause (a
// counterfactual that changes the servers or the defence instead), those
// of all its fault steps; FaultNone when there are none (a cause that is
// the story's timing: work that outlasts the TTL).
func faultsOf(sc *scenarios.Scenario) []string {
	kinds := func(causeOnly bool) []string {
		var out []string
		for _, st := range sc.Steps {
			if (causeOnly && !st.Cause) || st.Do == "resume" {
				continue
			}
			if _, ok := nemesis.LookupKind(st.Do); ok && !slices.Contains(out, st.Do) {
				out = append(out, st.Do)
			}
		}
		return out
	}
	caused := slices.ContainsFunc(sc.Steps, func(st scenarios.Step) bool { return st.Cause })
	if out := kinds(caused); len(out) > 0 {
		return out
	}
	return []string{FaultNone}
}
