package hunt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locksim/locksim/history"
	"github.com/locksim/locksim/scenarios"
)

// claim is what one step of a played story came to, to be written into
// the found story as its assertions and its narration: how the step's
// operation ended, the nodes that granted it, the reason of a refusal,
// the value a write read.
type claim struct {
	expect, reason string
	grantedBy      []string
	read           *int64
	say            string
}

// same says whether two runs' claims of one step agree on each fact a
// replay checks (runner's matches): the end, the reason, the nodes that
// granted it, the value read.
func (c claim) same(d claim) bool {
	return c.expect == d.expect && c.reason == d.reason && slices.Equal(c.grantedBy, d.grantedBy) &&
		(c.read == nil) == (d.read == nil) && (c.read == nil || *c.read == *d.read)
}

func (c claim) apply(st *step) {
	st.Expect, st.Reason, st.GrantedBy, st.Read = c.expect, c.reason, c.grantedBy, c.read
	if c.say != "" {
		st.Say = c.say
	}
}

// claims reads what each step of story s came to from the history of
// its run: each client's operations complete in the order its steps
// invoked them (one at a time per client), so the k-th operation step of
// client c is the k-th invocation of process c. nodes > 1 keeps the
// nodes that granted an acquire (Redlock).
func claims(s *Story, events []history.Event, nodes int) []claim {
	type op struct {
		invoke, done *history.Event
	}
	ops := map[int][]op{}
	open := map[int]int{}
	for i := range events {
		e := &events[i]
		if e.Process == 0 || e.Op == history.OpCrash {
			continue // a crash (a kill) completes no operation: one it cut off stays open
		}
		switch e.Type {
		case history.Invoke:
			ops[e.Process] = append(ops[e.Process], op{invoke: e})
			open[e.Process] = len(ops[e.Process])
		case history.Ok, history.Fail, history.Info:
			if k := open[e.Process]; k > 0 && ops[e.Process][k-1].done == nil {
				ops[e.Process][k-1].done = e
			}
		}
	}
	out := make([]claim, len(s.steps))
	next := map[int]int{}
	var lastWrite = map[int]int{} // a wait reports its client's async step
	for i, st := range s.steps {
		switch st.Do {
		case "acquire", "write", "release":
			k := next[st.Client]
			next[st.Client]++
			if k >= len(ops[st.Client]) || ops[st.Client][k].done == nil {
				continue
			}
			o := ops[st.Client][k]
			c := claim{expect: scenarios.Ended(st.Do, o.done.Type), reason: o.done.Reason}
			if c.expect != scenarios.Refused {
				c.reason = ""
			}
			if st.Do == "acquire" && c.expect == scenarios.Granted && nodes > 1 {
				c.grantedBy = o.done.Nodes
			}
			if st.Do == "write" && c.expect != scenarios.Unknown {
				c.read = o.done.Read
				if c.read == nil {
					c.read = o.invoke.Read
				}
			}
			c.say = narrate(st, c)
			if st.Async { // the wait step tells how it ended
				lastWrite[st.Client] = i
				c.say = asks(st)
			}
			out[i] = c
		case "wait":
			if w, ok := lastWrite[st.Client]; ok {
				out[i].say = narrate(s.steps[w], out[w])
			}
		}
	}
	return out
}

// asks says what an async step starts: an acquire that the wait step
// will see granted or refused, a write whose work the story goes on
// beside.
func asks(st step) string {
	if st.Do == "acquire" {
		return fmt.Sprintf("Client %d asks for the lock.", st.Client)
	}
	return fmt.Sprintf("Client %d reads the counter and works for %s before writing.", st.Client, st.Work)
}

// narrate says what a client's step did, from its claim.
func narrate(st step, c claim) string {
	who := fmt.Sprintf("Client %d", st.Client)
	switch st.Do {
	case "acquire":
		switch {
		case c.expect == scenarios.Granted && len(c.grantedBy) > 0:
			return fmt.Sprintf("%s takes the lock (granted by %s).", who, strings.Join(c.grantedBy, ", "))
		case c.expect == scenarios.Granted:
			return who + " takes the lock."
		}
		return fmt.Sprintf("%s asks for the lock: %s%s.", who, c.expect, because(c.reason))
	case "write":
		read := ""
		if c.read != nil {
			read = fmt.Sprintf(" from its read of %d", *c.read)
		}
		return fmt.Sprintf("%s writes counter+1%s: %s%s.", who, read, c.expect, because(c.reason))
	case "release":
		return fmt.Sprintf("%s releases the lock: %s%s.", who, c.expect, because(c.reason))
	}
	return ""
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
