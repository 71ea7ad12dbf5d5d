// Package sweep runs a generator scenario across a range of one parameter,
// for each lock named, M trials a point, and turns the trials into rates
// with 95% Wilson intervals: the CSV and the rows the plots are drawn from.
package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/input"
	"github.com/locksim/locksim/nemesis"
)

// Key is a parameter a sweep can vary: the size a generator draws for
// each fault kind (nemesis.Drawn: pause, jump, delay, drift), the TTL or
// the work time.
type Key struct {
	nemesis.Drawn
	// Fault is the fault kind it sizes ("" for ttl and work).
	Fault string
}

// Rate says the key is a plain number, not a duration.
func (k Key) Rate() bool { return k.Unit == nemesis.UnitRate }

// Axis is the label of a plot's x axis along the key.
func (k Key) Axis() string {
	switch {
	case k.Rate():
		return strings.TrimPrefix(k.What, "the ") + " rate (x real time)"
	case k.Name == "ttl":
		return "TTL (ms)"
	}
	return k.Name + " / TTL"
}

// Measurable says the key sizes a fault whose size a trial measures as
// it struck (runner.Struck), so that a plot can draw the rates against
// the sizes measured (Row.Spread) rather than planned.
func (k Key) Measurable() bool { return k.Fault != "" && !k.Rate() }

// Keys lists the parameters a sweep can vary: every fault size the
// registry lets a generator draw, then ttl and work.
var Keys = keys()

func keys() []Key {
	var out []Key
	for _, k := range nemesis.GeneratedKinds() {
		out = append(out, Key{Drawn: k.Generate.Drawn, Fault: k.Name})
	}
	return append(out,
		Key{Drawn: nemesis.Drawn{Name: "ttl", Doc: "the lease time clients ask for", What: "the TTL"}},
		Key{Drawn: nemesis.Drawn{Name: "work", Doc: "mean work time inside the critical section", What: "the work time", Range: [2]float64{0.1, 2}}})
}

// LookupKey finds a key by name.
func LookupKey(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// KeyNames lists the keys' names, durations then rates.
func KeyNames() (durations, rates []string) {
	for _, k := range Keys {
		if k.Rate() {
			rates = append(rates, k.Name)
		} else {
			durations = append(durations, k.Name)
		}
	}
	return durations, rates
}

// Value is one end of a range: a duration, a multiple of the TTL (RelTTL)
// or, for drift, a plain number.
type Value struct {
	// X is the number: nanoseconds, a multiple of the TTL, or a rate.
	X float64
	// RelTTL says X is a multiple of the TTL.
	RelTTL bool
}

// Param is a parsed --param KEY=FROM..TO.
type Param struct {
	Key      string
	From, To Value
}

// ParseParam parses "pause=0.2ttl..3ttl", "jump=100ms..2s", "drift=1..3";
// a fault's size alone ("pause") sweeps the range its kind declares
// (nemesis.Drawn.Range). Errors are one line naming what is wrong.
func ParseParam(s string) (Param, error) {
	key, rng, ok := strings.Cut(s, "=")
	k, known := LookupKey(key)
	if !ok && known && k.Fault != "" {
		p := Param{Key: key, From: Value{X: k.Range[0], RelTTL: !k.Rate()}, To: Value{X: k.Range[1], RelTTL: !k.Rate()}}
		return p, nil
	}
	if !ok || key == "" {
		return Param{}, input.Errorf("param", strconv.Quote(s), "expected KEY=FROM..TO, e.g. pause=0.2ttl..3ttl")
	}
	if !known {
		var names []string
		for _, k := range Keys {
			names = append(names, k.Name)
		}
		return Param{}, input.Errorf("param", strconv.Quote(s), fmt.Sprintf("unknown key %q (known: %s)", key, strings.Join(names, ", ")))
	}
	from, to, ok := strings.Cut(rng, "..")
	if !ok {
		return Param{}, input.Errorf("param", strconv.Quote(s), fmt.Sprintf("expected a range FROM..TO, e.g. %s=0.2ttl..3ttl", key))
	}
	p := Param{Key: key}
	var err error
	if p.From, err = parseValue(k, from); err != nil {
		return Param{}, input.Errorf("param", strconv.Quote(s), err.Error())
	}
	if p.To, err = parseValue(k, to); err != nil {
		return Param{}, input.Errorf("param", strconv.Quote(s), err.Error())
	}
	if p.From.RelTTL != p.To.RelTTL {
		return Param{}, input.Errorf("param", strconv.Quote(s), "both ends must be relative to the TTL or neither")
	}
	if p.To.X < p.From.X {
		return Param{}, input.Errorf("param", strconv.Quote(s), "FROM is above TO")
	}
	return p, nil
}

func parseValue(key Key, s string) (Value, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Value{}, fmt.Errorf("empty value")
	}
	if key.Rate() {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x <= 0 {
			return Value{}, fmt.Errorf("expected a rate above 0 like 1.5, got %q", s)
		}
		return Value{X: x}, nil
	}
	if num, ok := strings.CutSuffix(s, "ttl"); ok {
		if key.Name == "ttl" {
			return Value{}, fmt.Errorf("the TTL cannot be relative to itself: give durations like 50ms..2s")
		}
		x, err := strconv.ParseFloat(num, 64)
		if err != nil || x < 0 {
			return Value{}, fmt.Errorf("expected a multiple of the TTL like 0.5ttl, got %q", s)
		}
		return Value{X: x, RelTTL: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || (d == 0 && s != "0" && s != "0s") {
		return Value{}, fmt.Errorf("expected a duration like 200ms or 2s, or a multiple of the TTL like 0.5ttl, got %q", s)
	}
	if d == 0 && key.Name == "ttl" {
		return Value{}, fmt.Errorf("expected a TTL above 0")
	}
	return Value{X: float64(d)}, nil
}

// Points returns n values evenly spaced from From to To (n >= 1; one point
// is From).
func (p Param) Points(n int) []Value {
	out := make([]Value, n)
	for i := range out {
		x := p.From.X
		if n > 1 {
			x += (p.To.X - p.From.X) * float64(i) / float64(n-1)
		}
		out[i] = Value{X: x, RelTTL: p.From.RelTTL}
	}
	return out
}

// isRate says the named key is a plain number.
func isRate(name string) bool {
	k, _ := LookupKey(name)
	return k.Rate()
}

// Duration resolves v against ttl (drift values are not durations).
func (v Value) Duration(ttl time.Duration) time.Duration {
	if v.RelTTL {
		return time.Duration(v.X * float64(ttl)).Round(time.Microsecond)
	}
	return time.Duration(v.X)
}

// String is the parameter as --param takes it, KEY=FROM..TO, to full
// precision.
func (p Param) String() string {
	return p.Key + "=" + p.From.exact(p.Key) + ".." + p.To.exact(p.Key)
}

// exact prints a value as ParseParam reads it back, unrounded.
func (v Value) exact(key string) string {
	switch {
	case isRate(key):
		return strconv.FormatFloat(v.X, 'g', -1, 64)
	case v.RelTTL:
		return strconv.FormatFloat(v.X, 'g', -1, 64) + "ttl"
	}
	return time.Duration(v.X).String()
}
