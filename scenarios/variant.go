package scenarios

// variant.go: a story as a run plays it (Resolve makes it), and the
// scenarios a command line names.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/nemesis"
)

// Variant is a story as a run plays it: Resolve's result.
type Variant struct {
	// Scenario is the story as it runs: with Resolve's changes, its
	// defaults and its counterfactual built, validated.
	Scenario *Scenario
	// Own is the story's own lock; Lock the one it runs with.
	Own, Lock string
	// SkipCF says why the story's counterfactual means nothing with this
	// lock ("": it does, or there is none).
	SkipCF string
}

// Name is how the run goes by in what sim prints: "redis-ttl-expiry with
// lock redlock".
func (v Variant) Name() string {
	if v.Lock == v.Own {
		return v.Scenario.Name
	}
	return v.Scenario.Name + " with lock " + v.Lock
}

// highestNode returns the index of the highest node the story's
// steps name (-1: none) and where.
func highestNode(sc *Scenario) (int, string) {
	best, where := -1, ""
	see := func(node string, at string) {
		if len(node) == 1 && node[0] >= 'A' && node[0] <= 'Z' && int(node[0]-'A') > best {
			best, where = int(node[0]-'A'), at
		}
	}
	var visit func(st Step, at string)
	visit = func(st Step, at string) {
		aim := st.Aim()
		see(aim.Node, at)
		for _, n := range aim.Links {
			see(n, at)
		}
		for _, n := range st.GrantedBy {
			see(n, at)
		}
		if st.Counterfactual != nil {
			visit(*st.Counterfactual, at+"'s counterfactual")
		}
	}
	for i, st := range sc.Steps {
		visit(st, fmt.Sprintf("step %d", i+1))
	}
	return best, where
}

// Select turns the names a command line gives into scenarios (all: the
// whole catalogue first): an exact name or a file first; else a regex
// matching some names selects them all; else the "no such scenario, did
// you mean" error. Each scenario comes once.
func Select(all bool, targets []string) ([]*Scenario, error) {
	var list []*Scenario
	seen := map[string]bool{}
	add := func(sc *Scenario) {
		if !seen[sc.Name] {
			seen[sc.Name] = true
			list = append(list, sc)
		}
	}
	if all {
		all, err := Catalogue()
		if err != nil {
			return nil, err
		}
		for _, sc := range all {
			add(sc)
		}
	}
	for _, t := range targets {
		sc, err := Find(t)
		if err == nil {
			add(sc)
			continue
		}
		var nf *NotFoundError
		if !errors.As(err, &nf) {
			return nil, err
		}
		matches, merr := Match(t)
		if merr != nil || len(matches) == 0 {
			return nil, err
		}
		for _, sc := range matches {
			add(sc)
		}
	}
	return list, nil
}

// ReferenceLock is the story's reference: its own lock, or, when that is
// a mutant, the lock the mutant breaks (clients.Spec.MutantOf). A lock
// that stands in for no other is judged against it (ReferenceFor). The
// reference plays sc as it is.
func ReferenceLock(sc *Scenario) string {
	if spec, err := clients.Lookup(sc.Lock); err == nil && spec.MutantOf != "" {
		return spec.MutantOf
	}
	return sc.Lock
}

// OwnLock is the lock the story was told with: its Lock, unless a run
// put another in it (Resolve with Changes.Lock). Its expected verdict is
// that lock's.
func (s *Scenario) OwnLock() string {
	if s.own != "" {
		return s.own
	}
	return s.Lock
}

// Unrealistic says why one of the story's faults is a form no real
// machine has (nemesis.Spec.Unrealistic), with its step: "" when every
// fault is one a machine has. The story may teach with it; sim findings
// does not count it against a library.
func (s *Scenario) Unrealistic() string {
	for i, st := range s.Steps {
		if k, ok := nemesis.LookupKind(st.Do); ok && k.Unrealistic != nil && st.Params != nil {
			if why := k.Unrealistic(st.Params); why != "" {
				return fmt.Sprintf("step %d (%s): %s", s.StepNumber(i), st.Do, why)
			}
		}
	}
	return ""
}

// ReferenceFor is the lock a stand-in is judged against on sc: for a
// client program (program), the lock it says it is like, which lock is;
// for a registered lock other than the story's own, the lock it is like
// (clients.Spec.Like), else ReferenceLock(sc). So a stand-in is never
// judged against a defence it does not claim: Kazoo, like zookeeper, is
// judged against zookeeper on zookeeper-lock-delay's story, not against
// the story's own lock with its lock-delay.
func ReferenceFor(sc *Scenario, lock string, program bool) string {
	if program {
		return lock
	}
	if spec, err := clients.Lookup(lock); err == nil && spec.Like != "" && lock != sc.Lock {
		return spec.Like
	}
	return ReferenceLock(sc)
}

// NoReference says why locksim's lock lock cannot play sc as the
// reference a stand-in lock is judged against ("" when it can): the story
// has an acquire that waits, and lock tries once (a story told for client
// programs that wait, such as examples/kazoo's). With no reference, a lock
// is judged against the story's expected verdict.
func NoReference(sc *Scenario, lock string) string {
	spec, err := clients.Lookup(lock)
	if w := sc.waitingAcquire(); w != "" && err == nil && !spec.Waits {
		return fmt.Sprintf("the story has an acquire that waits for the lock (%s); locksim's lock %s tries once", w, lock)
	}
	return ""
}

// lockedKeys are the keys the story's acquires ask for, each once, in
// the order they first come.
func (sc *Scenario) lockedKeys() []string {
	var keys []string
	for _, st := range sc.Steps {
		if st.Do != "acquire" {
			continue
		}
		if k := cmp.Or(st.Key, sc.Key); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// waitingAcquire says where the story's first acquire that waits for the
// lock is ("" when none does).
func (sc *Scenario) waitingAcquire() string {
	for i, st := range sc.Steps {
		if st.Do == "acquire" && st.Wait.Duration > 0 {
			return fmt.Sprintf("steps[%d], client %d, wait %v", i, st.Client, st.Wait.Duration)
		}
	}
	return ""
}
