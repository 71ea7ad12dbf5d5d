package input

import (
	"errors"
	"fmt"
	"testing"
)

// TestWords: an input error reads as the form's field and as the CLI's
// flag, the other inputs it names too; wrapped after it, it still
// becomes a flag; said after something else, it is left alone.
func TestWords(t *testing.T) {
	e := Errorf("ttl", "100ms", "the lock's leases last at least 400ms: give a {ttl} of 400ms or more, or another {lock}")
	if got, want := e.Error(), "ttl 100ms: the lock's leases last at least 400ms: give a ttl of 400ms or more, or another lock"; got != want {
		t.Errorf("form: %q, want %q", got, want)
	}
	if got, want := AsFlag(e).Error(), "--ttl 100ms: the lock's leases last at least 400ms: give a --ttl of 400ms or more, or another --lock"; got != want {
		t.Errorf("flag: %q, want %q", got, want)
	}
	if got, want := AsFlag(Errorf("faults", "", "none")).Error(), "--faults: none"; got != want {
		t.Errorf("no value: %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("%w (see sim hunt --help)", Errorf("clients", "4", "expected 2 or 3"))
	if got, want := AsFlag(wrapped).Error(), "--clients 4: expected 2 or 3 (see sim hunt --help)"; got != want {
		t.Errorf("wrapped: %q, want %q", got, want)
	}
	after := fmt.Errorf("the baseline: %w", Errorf("clients", "4", "expected 2 or 3"))
	if got := AsFlag(after).Error(); got != after.Error() {
		t.Errorf("an error said after another became %q", got)
	}
	plain := errors.New("plain")
	if AsFlag(plain) != plain {
		t.Error("a plain error was changed")
	}
}
