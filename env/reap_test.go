package env

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReapRemovesOnlyWhatDeadOwnersLeft: a dir whose owner process is gone
// (or whose pid now belongs to another process, or that has no owner and
// is old) is removed; one whose owner lives, a young unmarked one, and
// anything not named locksim-* are kept.
func TestReapRemovesOnlyWhatDeadOwnersLeft(t *testing.T) {
	root := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "data", "f"), make([]byte, 1000), 0o644)
		if owner != "" {
			os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644)
		}
		return d
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	self, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	gone := mk("locksim-run-gone", strings.Join([]string{strconv.Itoa(dead.Process.Pid), "12345"}, " "))
	reused := mk("locksim-run-reused", strconv.Itoa(os.Getpid())+" 1") // our pid, another start time
	alive := mk("locksim-run-alive", strconv.Itoa(os.Getpid())+" "+self)
	young := mk("locksim-run-young", "")
	old := mk("locksim-run-old", "")
	os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	other := mk("not-ours", "")
	os.Chtimes(other, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))

	r, err := Reap(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{gone, reused, old} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s was left", filepath.Base(d))
		}
	}
	for _, d := range []string{alive, young, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed", filepath.Base(d))
		}
	}
	if len(r.Dirs) != 3 || r.Bytes < 3000 {
		t.Errorf("Reaped %+v, want 3 dirs of at least 3000 bytes", r)
	}
}

// TestTempDirIsMarked: the harness's own temp dirs name it as their owner.
func TestTempDirIsMarked(t *testing.T) {
	d, err := TempDir("locksim-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer RemoveTempDir(d)
	if pid, alive, ok := ownerAlive(d); !ok || !alive || pid != os.Getpid() {
		t.Fatalf("owner of %s: pid %d alive %v marked %v, want this process", d, pid, alive, ok)
	}
}
