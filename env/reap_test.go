package env

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestReapRemovesOnlyWhatDeadOwnersLeft: a dir whose owner process is gone
// (or whose pid now belongs to another process, or that has no owner and
// is old) is removed; one whose owner lives, a young unmarked one, and
// anything not named locksim-* are kept.
func TestReapRemovesOnlyWhatDeadOwnersLeft(t *testing.T) {
	root := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "data", "f"), make([]byte, 1000), 0o644)
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
	me := strconv.Itoa(os.Getpid())
	gone := mk("locksim-run-o" + strconv.Itoa(dead.Process.Pid) + ".12345-1")
	reused := mk("locksim-run-o" + me + ".1-2") // our pid, another start time
	alive := mk("locksim-pg-template-o" + me + "." + self + "-3")
	young := mk("locksim-run-4")
	old := mk("locksim-run-5")
	os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	other := mk("not-ours-o" + strconv.Itoa(dead.Process.Pid) + ".12345-6")

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

// TestTempDirIsMarked: the harness's own temp dirs name it as their owner,
// in their name: there is no moment in which one exists unmarked.
func TestTempDirIsMarked(t *testing.T) {
	d, err := TempDir("locksim-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer RemoveTempDir(d)
	if pid, alive, ok := ownerAlive(d); !ok || !alive || pid != os.Getpid() {
		t.Fatalf("owner of %s: pid %d alive %v marked %v, want this process", d, pid, alive, ok)
	}
	if born, ok := ownerStarted(d); !ok || time.Since(born) < 0 || time.Since(born) > time.Hour {
		t.Fatalf("owner of %s started at %v, want this test process's start", d, born)
	}
}
