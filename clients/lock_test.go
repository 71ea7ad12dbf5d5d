package clients

import (
	"testing"
	"time"

	"github.com/locksim/locksim/history"
)

// TestStillValid: a lease is valid while its time runs, by the monotonic
// clock or by its wall-clock deadline, and, where its lock says whether
// its connection vouches for it (Live), only while that holds: a
// ZooKeeper lease whose session is suspended is not valid however young.
func TestStillValid(t *testing.T) {
	now := history.Monotonic()
	wall := time.Unix(1000, 0)
	clock := func() time.Time { return wall }
	live, dead := func() bool { return true }, func() bool { return false }
	cases := []struct {
		name string
		l    Lease
		want bool
	}{
		{"young, by the monotonic clock", Lease{Start: now, Validity: time.Minute}, true},
		{"spent, by the monotonic clock", Lease{Start: now - int64(2*time.Second), Validity: time.Second}, false},
		{"until released", Lease{Start: now - int64(time.Hour)}, true},
		{"before its wall-clock deadline", Lease{Start: now, Validity: time.Minute, Deadline: wall.Add(time.Second)}, true},
		{"past its wall-clock deadline", Lease{Start: now, Validity: time.Minute, Deadline: wall.Add(-time.Second)}, false},
		{"until released, connection live", Lease{Start: now, Live: live}, true},
		{"until released, connection suspended", Lease{Start: now, Live: dead}, false},
		{"young, connection suspended", Lease{Start: now, Validity: time.Minute, Live: dead}, false},
		{"spent, connection live", Lease{Start: now - int64(2*time.Second), Validity: time.Second, Live: live}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.l.StillValid(clock); got != c.want {
				t.Fatalf("StillValid = %v, want %v", got, c.want)
			}
		})
	}
}
