package clients

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/locksim/locksim/history"
)

func TestReasonOf(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrNotAcquired, history.ReasonHeld},
		{ErrNotHeld, history.ReasonNotHeld},
		{Refuse(ErrNotAcquired, history.ReasonValidity, "took %v", 2), history.ReasonValidity},
		{fmt.Errorf("wrapped: %w", Refuse(ErrNotAcquired, history.ReasonQuorum, "2 of 5")), history.ReasonQuorum},
		{context.DeadlineExceeded, history.ReasonTimeout},
		{errors.New("connection reset"), ""},
	}
	for _, c := range cases {
		if got := ReasonOf(c.err); got != c.want {
			t.Errorf("ReasonOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if err := Refuse(ErrNotAcquired, history.ReasonHeld, "x"); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("a refusal must unwrap to its base error")
	}
}
