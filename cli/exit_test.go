package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestExitCodes: the one place an error becomes an exit code. A verdict
// not as expected is 1 and says nothing more (the verdict lines did); an
// interrupt is 130 and says what was kept; anything else is 2 in one
// line; of several errors, each is said and the first one's code is the
// exit code.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code int
		said string
	}{
		{"ok", nil, exitOK, ""},
		{"bad input", errors.New("--expect: expected safe, unsafe, leaked or hung"), exitHarness, "sim: --expect: expected safe, unsafe, leaked or hung\n"},
		{"verdict differed", errMismatch, exitMismatch, ""},
		{"failed, already said", errFailed, exitHarness, ""},
		{"interrupted", interrupted("interrupted; the history so far is in %s", "runs/x"), exitInterrupted, "sim: interrupted; the history so far is in runs/x\n"},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), exitInterrupted, "sim: x: context canceled\n"},
		{"verdict differed, then --junit failed", errors.Join(errMismatch, errors.New("--junit: disk full")), exitMismatch, "sim: --junit: disk full\n"},
		{"interrupted, then --junit failed", errors.Join(interrupted("interrupted"), errors.New("--junit: disk full")), exitInterrupted, "sim: interrupted\nsim: --junit: disk full\n"},
		{"only --junit failed", errors.Join(nil, errors.New("--junit: disk full")), exitHarness, "sim: --junit: disk full\n"},
	} {
		var b bytes.Buffer
		if code := exit(&b, c.err); code != c.code || b.String() != c.said {
			t.Errorf("%s: exit %d, said %q; want %d, %q", c.name, code, b.String(), c.code, c.said)
		}
	}
}
