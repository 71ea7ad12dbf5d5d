package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/locksim/locksim/checker"
)

// TestPlayTries: a trial left unknown is played again until it has a
// verdict, at most the tries given; a trial with a verdict, an error or a
// stopped run is not played again.
func TestPlayTries(t *testing.T) {
	ended := func(v ...checker.Verdict) func() (*Trial, error) {
		i := 0
		return func() (*Trial, error) {
			tr := &Trial{Check: checker.Result{Verdict: v[min(i, len(v)-1)]}}
			i++
			return tr, nil
		}
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		tries   int
		play    func() (*Trial, error)
		want    checker.Verdict
		wantN   int
		wantErr bool
	}{
		{"safe at once", context.Background(), 3, ended(checker.Safe), checker.Safe, 1, false},
		{"unsafe on the second try", context.Background(), 3, ended(checker.Unknown, checker.Unsafe), checker.Unsafe, 2, false},
		{"unknown every time", context.Background(), 3, ended(checker.Unknown), checker.Unknown, 3, false},
		{"one try only", context.Background(), 1, ended(checker.Unknown, checker.Safe), checker.Unknown, 1, false},
		{"stopped", stopped, 3, ended(checker.Unknown, checker.Safe), checker.Unknown, 1, false},
		{"error", context.Background(), 3, func() (*Trial, error) { return nil, errors.New("server gone") }, "", 1, true},
	} {
		tr, n, err := PlayTries(c.ctx, c.tries, c.play)
		if (err != nil) != c.wantErr || n != c.wantN || (err == nil && tr.Check.Verdict != c.want) {
			t.Errorf("%s: %v after %d tries (err %v), want %q after %d", c.name, tr, n, err, c.want, c.wantN)
		}
	}
}
