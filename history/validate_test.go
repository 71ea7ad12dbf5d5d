package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ev(seq, t int64, process int, typ Type, op string) Event {
	return Event{Seq: seq, Time: t, Process: process, Type: typ, Op: op, Key: "L"}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		events []Event
		rule   string // "" for valid
	}{
		{"operations in order", []Event{
			ev(1, 0, 0, Fault, "pause"), ev(2, 5, 1, Invoke, OpAcquire), ev(3, 10, 1, Ok, OpAcquire),
			ev(4, 12, 1, Invoke, OpRelease), ev(5, 20, 1, Fail, OpRelease), ev(6, 25, 0, Heal, "pause"),
		}, ""},
		{"given in time order, checked in seq order", []Event{
			ev(2, 5, 1, Invoke, OpAcquire), ev(1, 6, 2, Invoke, OpAcquire), ev(3, 10, 1, Ok, OpAcquire), ev(4, 11, 2, Info, OpAcquire),
		}, ""},
		{"an invoke while another is open leaves it pending", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(2, 10, 1, Invoke, OpRelease), ev(3, 20, 1, Ok, OpRelease),
		}, ""},
		{"a crash completes nothing and needs no invocation", []Event{
			ev(1, 0, 1, Invoke, OpWrite), ev(2, 50, 1, Ok, OpCrash), ev(3, 40, 1, Info, OpWrite), ev(4, 60, 2, Info, OpCrash),
		}, ""},
		{"a watchdog's notes are stamped concurrently", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(2, 10, 1, Ok, OpAcquire), ev(3, 30, 1, Invoke, OpWrite),
			ev(4, 25, 1, Note, OpRenew), ev(5, 40, 1, Ok, OpWrite),
		}, ""},
		{"completion without an invocation", []Event{
			ev(1, 0, 1, Ok, OpAcquire), ev(2, 1, 2, Ok, OpAcquire),
		}, RuleInvokeFirst},
		{"second completion of one invocation", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(2, 1, 1, Ok, OpAcquire), ev(3, 2, 1, Ok, OpAcquire),
		}, RuleInvokeFirst},
		{"completion of another process's invocation", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(2, 1, 2, Ok, OpAcquire),
		}, RuleInvokeFirst},
		{"completion before its invocation in seq order", []Event{
			ev(2, 0, 1, Invoke, OpAcquire), ev(1, 1, 1, Ok, OpAcquire),
		}, RuleInvokeFirst},
		{"op mismatch", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(2, 1, 1, Ok, OpRelease),
		}, RuleSameOp},
		{"time backwards within a process", []Event{
			ev(1, 10, 1, Invoke, OpAcquire), ev(2, 5, 1, Ok, OpAcquire),
		}, RuleProcessTime},
		{"duplicate seq", []Event{
			ev(1, 0, 1, Invoke, OpAcquire), ev(1, 1, 1, Ok, OpAcquire),
		}, RuleUniqueSeq},
		{"unknown type", []Event{ev(1, 0, 1, "granted", OpAcquire)}, RuleKnownType},
		{"negative time", []Event{ev(1, -1, 1, Invoke, OpAcquire)}, RuleTime},
		{"operation of the harness", []Event{ev(1, 0, 0, Invoke, OpAcquire)}, RuleProcess},
		{"negative process", []Event{ev(1, 0, -1, Note, "step")}, RuleProcess},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.events)
			var inv *InvalidError
			switch {
			case c.rule == "" && err != nil:
				t.Fatalf("valid history rejected: %v", err)
			case c.rule == "":
			case !errors.As(err, &inv):
				t.Fatalf("got %v, want an *InvalidError for %s", err, c.rule)
			case inv.Rule != c.rule || inv.Line != 0 || !strings.Contains(err.Error(), "(rule: "+c.rule+")"):
				t.Fatalf("got %+v (%q), want rule %s", inv, err, c.rule)
			}
		})
	}
}

func TestReadNamesTheLine(t *testing.T) {
	okLine := `{"seq":1,"t":0,"process":0,"type":"note","op":"step"}` + "\n"
	for _, c := range []struct {
		name, text string
		line       int
		rule, msg  string
	}{
		{"three ok acquires and no invoke", okLine +
			`{"seq":2,"t":5,"process":1,"type":"ok","op":"acquire","key":"L"}` + "\n" +
			`{"seq":3,"t":6,"process":2,"type":"ok","op":"acquire","key":"L"}` + "\n" +
			`{"seq":4,"t":7,"process":3,"type":"ok","op":"acquire","key":"L"}` + "\n",
			2, RuleInvokeFirst, "line 2: completion without an invocation: ok acquire of process 1 (rule: invoke-before-completion)"},
		{"op mismatch after a blank line", okLine + "\n" +
			`{"seq":2,"t":5,"process":1,"type":"invoke","op":"acquire","key":"L"}` + "\n" +
			`{"seq":3,"t":6,"process":1,"type":"ok","op":"release","key":"L"}` + "\n",
			4, RuleSameOp, "line 4: ok release of process 1 completes an invocation of acquire"},
		{"written in time order, invalid in seq order", okLine +
			`{"seq":3,"t":5,"process":1,"type":"invoke","op":"acquire","key":"L"}` + "\n" +
			`{"seq":2,"t":6,"process":1,"type":"ok","op":"acquire","key":"L"}` + "\n",
			3, RuleInvokeFirst, "line 3: completion without an invocation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.text))
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Line != c.line || inv.Rule != c.rule || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v (%+v), want line %d, rule %s, %q", err, inv, c.line, c.rule, c.msg)
			}
		})
	}

	path := filepath.Join(t.TempDir(), "history.jsonl")
	os.WriteFile(path, []byte(`{"seq":1,"t":0,"process":1,"type":"ok","op":"acquire"}`+"\n"), 0o644)
	_, err := Load(path)
	var inv *InvalidError
	if !errors.As(err, &inv) || !strings.HasPrefix(err.Error(), path+": line 1: ") {
		t.Fatalf("Load: %v", err)
	}
}

// A recording made by a Recorder reads back, whether written as recorded
// or (as the generator does) from Events, in time order.
func TestRecorderRoundTrip(t *testing.T) {
	var b strings.Builder
	r := NewRecorder(0, &b)
	r.Add(Event{Time: 10, Process: 1, Type: Invoke, Op: OpWrite, Key: "L"})
	r.Add(Event{Time: 5, Process: 2, Type: Invoke, Op: OpAcquire, Key: "L"})
	r.Add(Event{Time: 20, Process: 1, Type: Ok, Op: OpWrite, Key: "L", Read: Int64(0), Wrote: Int64(1)})
	r.Add(Event{Time: 21, Process: 2, Type: Ok, Op: OpAcquire, Key: "L"})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var sorted strings.Builder
	if err := Write(&sorted, r.Events()); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{b.String(), sorted.String()} {
		events, err := Read(strings.NewReader(text))
		if err != nil || len(events) != 4 || events[0].Process != 2 {
			t.Fatalf("read %v, %v", events, err)
		}
	}
}
