// Package sweep runs a generator scenario across a range of one parameter,
// for each lock named, M trials a point, and turns the trials into rates
// with 95% Wilson intervals: the CSV and the rows the plots are drawn from.
package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Keys lists the parameters a sweep can vary, with what each one sets.
var Keys = map[string]string{
	"pause": "length of the pause fault",
	"jump":  "size of the clock-jump fault",
	"delay": "delay of the latency fault",
	"drift": "rate of the clock-drift fault (a number: 1.5 runs the clock 50% fast)",
	"ttl":   "the lease time clients ask for",
	"work":  "mean work time inside the critical section",
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

// ParseParam parses "pause=0.2ttl..3ttl", "jump=100ms..2s", "drift=1..3".
// Errors are one line naming what is wrong.
func ParseParam(s string) (Param, error) {
	key, rng, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return Param{}, fmt.Errorf("--param %q: expected KEY=FROM..TO, e.g. pause=0.2ttl..3ttl", s)
	}
	if _, known := Keys[key]; !known {
		return Param{}, fmt.Errorf("--param %q: unknown key %q (known: drift, jump, pause, delay, ttl, work)", s, key)
	}
	from, to, ok := strings.Cut(rng, "..")
	if !ok {
		return Param{}, fmt.Errorf("--param %q: expected a range FROM..TO, e.g. %s=0.2ttl..3ttl", s, key)
	}
	p := Param{Key: key}
	var err error
	if p.From, err = parseValue(key, from); err != nil {
		return Param{}, fmt.Errorf("--param %q: %v", s, err)
	}
	if p.To, err = parseValue(key, to); err != nil {
		return Param{}, fmt.Errorf("--param %q: %v", s, err)
	}
	if p.From.RelTTL != p.To.RelTTL {
		return Param{}, fmt.Errorf("--param %q: both ends must be relative to the TTL or neither", s)
	}
	if p.To.X < p.From.X {
		return Param{}, fmt.Errorf("--param %q: FROM is above TO", s)
	}
	return p, nil
}

func parseValue(key, s string) (Value, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Value{}, fmt.Errorf("empty value")
	}
	if key == "drift" {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x <= 0 {
			return Value{}, fmt.Errorf("expected a rate above 0 like 1.5, got %q", s)
		}
		return Value{X: x}, nil
	}
	if num, ok := strings.CutSuffix(s, "ttl"); ok {
		if key == "ttl" {
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
	if d == 0 && key == "ttl" {
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
	case key == "drift":
		return strconv.FormatFloat(v.X, 'g', -1, 64)
	case v.RelTTL:
		return strconv.FormatFloat(v.X, 'g', -1, 64) + "ttl"
	}
	return time.Duration(v.X).String()
}
