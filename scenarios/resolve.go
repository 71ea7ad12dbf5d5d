package scenarios

// resolve.go: the one place where a story becomes the story a run plays.
// Parse resolves a file's story (its defaults); sim run, sim matrix, sim
// sweep and sim findings resolve it with their changes (a lock, the
// flags); each resolved story is validated once, and its counterfactual
// built and validated with it.

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/locksim/locksim/clients"
	"github.com/locksim/locksim/input"
)

// Changes are what a run changes in a story before it plays it. The zero
// value changes nothing.
type Changes struct {
	// Lock plays the story with this registered lock instead of its own,
	// on the same servers (sim run --lock, sim matrix --locks, the lock a
	// reference plays): see WithLock.
	Lock string
	// Compare plays a generator story with a lock of any servers, for a
	// comparison (sim sweep --locks): the lock's name, on the nodes
	// LockNodes gives it, and with "+fenced" a PostgreSQL fencing token
	// and fenced storage; without it, no fence (fenced storage becomes
	// plain). A comparison's TTL is checked at each of its points, and a
	// fault its lock has no node for is left out of its schedule.
	Compare string
	// TTL and Clients replace the story's, Trials and Duration its
	// generator's (0: keep).
	TTL, Duration   time.Duration
	Clients, Trials int
	// Reference makes it the story as the lock a user's lock is judged
	// against plays it: the harness's own worker, and no counterfactual.
	Reference bool
	// NoCounterfactual drops the story's counterfactual.
	NoCounterfactual bool
	// Watchdog gives the story's clients this watchdog (token) where the
	// story has none: the reference a lock with a watchdog of its own
	// (clients.Spec.OwnWatchdog) is judged against renews its leases too.
	Watchdog string
}

// Resolve returns sc with c's changes, its defaults given and validated
// once, its counterfactual (CounterfactualScenario) built and validated
// with it. A story resolved and not changed is returned as it is.
func Resolve(sc *Scenario, c Changes) (Variant, error) {
	v := Variant{Scenario: sc, Own: sc.Lock, Lock: sc.Lock}
	cp := *sc
	changed := false
	if c.Lock != "" {
		var err error
		if changed, err = v.withLock(&cp, c.Lock); err != nil {
			return v, err
		}
	}
	if c.Compare != "" {
		if err := compare(&cp, c.Compare); err != nil {
			return v, err
		}
		v.Lock, changed = c.Compare, true
	}
	if c.TTL > 0 || c.Duration > 0 || c.Clients > 0 || c.Trials > 0 {
		flags(&cp, c)
		changed = true
	}
	if c.Watchdog != "" && cp.Watchdog == "" {
		cp.Watchdog, changed = c.Watchdog, true
	}
	if c.Reference && len(cp.ClientCmd) > 0 {
		cp.ClientCmd, changed = nil, true
		cp.givenAt = maps.Clone(cp.givenAt)
		delete(cp.givenAt, "client_cmd") // no longer given
	}
	if (c.Reference || c.NoCounterfactual) && cp.Counterfactual != nil {
		dropCounterfactual(&cp)
		changed = true
	}
	if !changed && sc.resolved {
		return v, nil
	}
	if changed {
		// Another lock may run on another backend, whose settings these are
		// not: its defaults, unless the story gave settings.
		set, err := cp.decodeSettings(cp.settings, cp.Settings, "")
		if err != nil {
			return v, fmt.Errorf("%s, as played: %w", v.Name(), err)
		}
		cp.Settings = set
	}
	cp.applyDefaults()
	if err := cp.validate(); err != nil {
		if changed {
			err = fmt.Errorf("%s, as played: %w", v.Name(), err)
		}
		return v, err
	}
	cp.resolved = true
	v.Scenario = &cp
	return v, nil
}

// WithLock returns sc played with lock name instead of its own
// (Resolve with Changes.Lock). The story keeps everything else: its
// servers' settings, its steps and what they claim (a lock that does not
// behave as told ends as a contradiction, exit 2), its expected verdict.
// The nodes (Redis servers, etcd members) are LockNodes': a single-node
// lock (redis) runs on one node, a quorum lock (redlock) on the story's
// nodes when it has several, else on its own default (5); a story that
// names a node the lock does not have, or that renews with a plain
// PEXPIRE the lock cannot send (clients.Spec's PlainExpire), cannot be
// told with it.
func WithLock(sc *Scenario, name string) (Variant, error) {
	return Resolve(sc, Changes{Lock: name})
}

// inapplicable is a story that cannot be told with a lock: the lock needs
// other servers, or has fewer nodes than the story names. sim run
// refuses it (exit 2); sim matrix shows the cell as n/a.
type inapplicable struct{ msg string }

func (e *inapplicable) Error() string { return e.msg }

// withLock gives cp, a copy of v's story, lock name (WithLock), and says
// whether that changed it.
func (v *Variant) withLock(cp *Scenario, name string) (bool, error) {
	sc := v.Scenario
	v.Lock = name
	spec, err := clients.Lookup(name)
	if err != nil {
		return false, err
	}
	own, err := clients.Lookup(sc.Lock)
	if err != nil {
		return false, err
	}
	if spec.Backend != own.Backend {
		return false, &inapplicable{fmt.Sprintf("scenario %s uses %s lock; %s is %s lock", sc.Name, Indefinite(string(own.Backend)), name, Indefinite(string(spec.Backend)))}
	}
	// A story's own client program (client_cmd) says in its hello
	// whether it waits; a registered lock says so in its Spec.
	if w := sc.waitingAcquire(); w != "" && !spec.Waits && len(sc.ClientCmd) == 0 {
		return false, &inapplicable{fmt.Sprintf("scenario %s has an acquire that waits for the lock (%s); lock %s tries once", sc.Name, w, name)}
	}
	if keys := sc.lockedKeys(); spec.OneLock != "" && len(keys) > 1 {
		return false, &inapplicable{fmt.Sprintf("scenario %s locks %d keys (%s); lock %s takes one lock whatever the key (%s)", sc.Name, len(keys), strings.Join(keys, ", "), name, spec.OneLock)}
	}
	if name == sc.Lock {
		return false, nil
	}
	if cp.own == "" {
		cp.own = sc.Lock
	}
	cp.Lock = name
	cp.Title = fmt.Sprintf("%s (played with lock %s instead of %s)", sc.Title, name, sc.Lock)
	cp.Nodes = LockNodes(sc, spec)
	if n, where := highestNode(sc); n >= cp.Nodes && cp.Nodes > 0 {
		has := "one node, A"
		if cp.Nodes > 1 {
			has = fmt.Sprintf("%d nodes, A to %s", cp.Nodes, NodeName(cp.Nodes-1))
		}
		return false, &inapplicable{fmt.Sprintf("scenario %s names node %s (%s); lock %s runs on %s", sc.Name, NodeName(n), where, name, has)}
	}
	if sc.Watchdog == "pexpire" && !spec.PlainExpire {
		return false, &inapplicable{fmt.Sprintf("scenario %s renews with a plain PEXPIRE (watchdog: pexpire), which lock %s cannot send", sc.Name, name)}
	}
	switch c := sc.Counterfactual; {
	case c == nil:
	case c.Given("lock"):
		v.SkipCF = fmt.Sprintf("it changes the lock (%s -> %s: %s), which means nothing for lock %s", sc.Lock, c.Lock, c.Change, name)
		dropCounterfactual(cp)
	case c.Given("watchdog") && c.Watchdog == "pexpire" && !spec.PlainExpire:
		v.SkipCF = fmt.Sprintf("it renews with a plain PEXPIRE (%s), which lock %s cannot send", c.Change, name)
		dropCounterfactual(cp)
	}
	return true, nil
}

// compare gives cp, a generator story, the lock of a comparison
// (Changes.Compare).
func compare(cp *Scenario, name string) error {
	if cp.Generator == nil {
		return fmt.Errorf("%s is a scripted story; a comparison of locks needs a generator scenario (sim list 'gen-')", cp.Name)
	}
	base, fenced := strings.CutSuffix(name, "+fenced")
	spec, err := clients.Lookup(base)
	if err != nil {
		return input.Errorf("locks", "", err.Error())
	}
	g := *cp.Generator
	cp.Generator = &g
	if fenced {
		cp.Fence, cp.Storage = clients.FencePostgres, "fenced"
	} else {
		cp.Fence = ""
		if cp.Storage == "fenced" {
			cp.Storage = "plain"
		}
	}
	// The nodes are worked out on the story with the variant's fence and
	// its own lock, then the lock changes.
	cp.Nodes = LockNodes(cp, spec)
	cp.Lock = base
	cp.compared = true
	return nil
}

// flags gives cp the TTL, clients, trials and duration c asks for.
func flags(cp *Scenario, c Changes) {
	if c.TTL > 0 {
		cp.TTL.Duration = c.TTL
	}
	if c.Clients > 0 {
		cp.Clients = c.Clients
	}
	if g := cp.Generator; g != nil && (c.Trials > 0 || c.Duration > 0) {
		cp.Generator = &Generator{}
		*cp.Generator = *g
		if c.Trials > 0 {
			cp.Generator.Trials = c.Trials
		}
		if c.Duration > 0 {
			cp.Generator.Duration.Duration = c.Duration
		}
	}
}

// dropCounterfactual takes cp's counterfactual away, and with it the
// steps' marks for it (cause, a changed step).
func dropCounterfactual(cp *Scenario) {
	cp.Counterfactual = nil
	steps := make([]Step, len(cp.Steps))
	for i, st := range cp.Steps {
		st.Cause, st.Counterfactual = false, nil
		steps[i] = st
	}
	cp.Steps = steps
}
