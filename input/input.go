// Package input is an error about one named input of a command or a
// form: a hunt's ttl, a sweep's param. A library says which input was
// wrong by its name; the CLI shows it as a flag (--ttl), the web page
// as its field (ttl), so neither reads the other's words.
package input

import (
	"errors"
	"regexp"
	"strings"
)

// Error is what was wrong with input Name given Value ("" when the value
// says nothing). Msg names other inputs as {name}.
type Error struct {
	Name, Value, Msg string
}

// Errorf is an Error of input name, given value.
func Errorf(name, value, msg string) *Error { return &Error{Name: name, Value: value, Msg: msg} }

// Error is the form's words: "ttl 100ms: expected ...".
func (e *Error) Error() string { return e.render(func(n string) string { return n }) }

// Flag is the CLI's words: "--ttl 100ms: expected ...".
func (e *Error) Flag() string { return e.render(func(n string) string { return "--" + n }) }

var ref = regexp.MustCompile(`\{([a-z][a-z0-9-]*)\}`)

func (e *Error) render(name func(string) string) string {
	head := name(e.Name)
	if e.Value != "" {
		head += " " + e.Value
	}
	return head + ": " + ref.ReplaceAllStringFunc(e.Msg, func(m string) string { return name(m[1 : len(m)-1]) })
}

// AsFlag gives err in the CLI's words when an Error leads it (it may be
// wrapped, with nothing said before it); any other error is returned
// as it is.
func AsFlag(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	plain, whole := e.Error(), err.Error()
	if !strings.HasPrefix(whole, plain) {
		return err
	}
	return errors.New(e.Flag() + whole[len(plain):])
}
