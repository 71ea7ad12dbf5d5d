package scenarios

// variant.go: a story played with another registered lock than its own
// (sim run --lock, sim matrix --locks), and the scenarios a command line
// names.

import (
	"errors"
	"fmt"

	"github.com/locksim/locksim/clients"
)

// Variant is a story played with another lock than its own.
type Variant struct {
	// Scenario is the story as it runs: its lock (and how many nodes it
	// has) replaced.
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

// inapplicable is a story that cannot be told with a lock: the lock needs
// other servers, or has fewer nodes than the story names. sim run
// refuses it (exit 2); sim matrix shows the cell as n/a.
type inapplicable struct{ msg string }

func (e *inapplicable) Error() string { return e.msg }

// WithLock returns sc played with lock name instead of its own. The story
// keeps everything else: its servers' settings, its steps and what they
// claim (a lock that does not behave as told ends as a contradiction, exit
// 2), its expected verdict. The nodes (Redis servers, etcd members) are
// LockNodes': a single-node lock (redis) runs on one node, a quorum lock
// (redlock) on the story's nodes when it has several, else on its own
// default (5); a story that names a node the lock does not have, or that
// renews with a plain PEXPIRE the lock cannot send (clients.Spec's
// PlainExpire), cannot be told with it.
func WithLock(sc *Scenario, name string) (Variant, error) {
	v := Variant{Scenario: sc, Own: sc.Lock, Lock: name}
	spec, err := clients.Lookup(name)
	if err != nil {
		return v, err
	}
	own, err := clients.Lookup(sc.Lock)
	if err != nil {
		return v, err
	}
	if spec.Backend != own.Backend {
		return v, &inapplicable{fmt.Sprintf("scenario %s uses %s lock; %s is %s lock", sc.Name, Indefinite(string(own.Backend)), name, Indefinite(string(spec.Backend)))}
	}
	// A story's own client program (client_cmd) says in its hello
	// whether it waits; a registered lock says so in its Spec.
	if w := sc.waitingAcquire(); w != "" && !spec.Waits && len(sc.ClientCmd) == 0 {
		return v, &inapplicable{fmt.Sprintf("scenario %s has an acquire that waits for the lock (%s); lock %s tries once", sc.Name, w, name)}
	}
	if name == sc.Lock {
		return v, nil
	}
	cp := *sc
	cp.Lock = name
	cp.Title = fmt.Sprintf("%s (played with lock %s instead of %s)", sc.Title, name, sc.Lock)
	cp.Nodes = LockNodes(sc, spec)
	if n, where := highestNode(sc); n >= cp.Nodes && cp.Nodes > 0 {
		has := "one node, A"
		if cp.Nodes > 1 {
			has = fmt.Sprintf("%d nodes, A to %s", cp.Nodes, NodeName(cp.Nodes-1))
		}
		return v, &inapplicable{fmt.Sprintf("scenario %s names node %s (%s); lock %s runs on %s", sc.Name, NodeName(n), where, name, has)}
	}
	if sc.Watchdog == "pexpire" && !spec.PlainExpire {
		return v, &inapplicable{fmt.Sprintf("scenario %s renews with a plain PEXPIRE (watchdog: pexpire), which lock %s cannot send", sc.Name, name)}
	}
	switch c := sc.Counterfactual; {
	case c == nil:
	case c.Given("lock"):
		v.SkipCF = fmt.Sprintf("it changes the lock (%s -> %s: %s), which means nothing for lock %s", sc.Lock, c.Lock, c.Change, name)
		cp.Counterfactual = nil
	case c.Given("watchdog") && c.Watchdog == "pexpire" && !spec.PlainExpire:
		v.SkipCF = fmt.Sprintf("it renews with a plain PEXPIRE (%s), which lock %s cannot send", c.Change, name)
		cp.Counterfactual = nil
	}
	v.Scenario = &cp
	return v, nil
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

// ReferenceLock is the lock a user's lock is judged against when it replaces
// sc's own (sim run --lock, --client-cmd): the story's own lock, or, when
// that is a mutant, the lock the mutant breaks (clients.Spec.MutantOf).
// The reference plays sc as it is.
func ReferenceLock(sc *Scenario) string {
	if spec, err := clients.Lookup(sc.Lock); err == nil && spec.MutantOf != "" {
		return spec.MutantOf
	}
	return sc.Lock
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
