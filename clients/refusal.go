package clients

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/locksim/locksim/history"
)

// Refusal is a certain refusal with its reason (one of history's Reason
// constants), so a story can assert why a lock said no. It unwraps to
// ErrNotAcquired or ErrNotHeld.
type Refusal struct {
	Reason string
	Err    error // ErrNotAcquired or ErrNotHeld
	Msg    string
}

func (r *Refusal) Error() string {
	if r.Msg == "" {
		return fmt.Sprintf("%v (%s)", r.Err, r.Reason)
	}
	return fmt.Sprintf("%v: %s", r.Err, r.Msg)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Refuse builds a Refusal of base (ErrNotAcquired or ErrNotHeld).
func Refuse(base error, reason, format string, args ...any) error {
	return &Refusal{Reason: reason, Err: base, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf names why an operation failed: the Refusal's reason, held for a
// bare ErrNotAcquired, not-held for a bare ErrNotHeld, timeout for a
// deadline, "" for any other error (its outcome is unknown).
func ReasonOf(err error) string {
	var r *Refusal
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &r):
		return r.Reason
	case errors.Is(err, ErrNotAcquired):
		return history.ReasonHeld
	case errors.Is(err, ErrNotHeld):
		return history.ReasonNotHeld
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return history.ReasonTimeout
	}
	return ""
}
