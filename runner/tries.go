package runner

import (
	"context"

	"github.com/locksim/locksim/checker"
)

// UnknownTries is how many times in all a trial or a story that the
// timing guard leaves unknown (the machine too slow to trust its timing)
// is played, with the same seed, before it is written as unknown with its
// reason. Generator runs, sweeps, hunts and sim findings all play by it.
const UnknownTries = 3

// PlayTries plays a trial until it ends with a verdict, up to tries times
// in all, and returns its last play and how many it took. An error or a
// stopped ctx ends it at once.
func PlayTries(ctx context.Context, tries int, play func() (*Trial, error)) (*Trial, int, error) {
	for n := 1; ; n++ {
		tr, err := play()
		if err != nil || tr.Check.Verdict != checker.Unknown || n >= tries || ctx.Err() != nil {
			return tr, n, err
		}
	}
}
