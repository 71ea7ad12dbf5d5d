package clockshim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// syncsC writes files the way Redis writes its append-only file: synced
// then written on, never synced, written to a temp file synced and
// renamed into place, replaced by an unsynced file renamed over it,
// synced and unlinked, synced then truncated and written on, and synced
// by a forked child (a rewrite's). It prints the inodes of the file
// renamed over and of the file unlinked.
const syncsC = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static char *at(const char *name) {
	static char p[8][4096];
	static int i;
	i = (i + 1) % 8;
	snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
	return p[i];
}
static int app(const char *name) { return open(at(name), O_WRONLY | O_CREAT | O_APPEND, 0644); }
static void put(int fd, const char *s) {
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		_exit(3);
}
#define MUST(x) do { if ((x) != 0) { perror(#x); _exit(4); } } while (0)

int main(int argc, char **argv) {
	dir = argv[1];
	int fd = app("incr");
	put(fd, "synced;");
	MUST(fdatasync(fd));
	put(fd, "unsynced;");
	put(app("never"), "lost;");
	int t = app("temp");
	put(t, "base;");
	MUST(fsync(t));
	close(t);
	MUST(rename(at("temp"), at("base")));
	int m = app("manifest");
	put(m, "old manifest;");
	MUST(fsync(m));
	close(m);
	int m2 = app("manifest.tmp");
	put(m2, "new;");
	close(m2);
	struct stat old, gs;
	MUST(stat(at("manifest"), &old));
	MUST(rename(at("manifest.tmp"), at("manifest")));
	int g = app("gone");
	put(g, "gone;");
	MUST(fsync(g));
	MUST(fstat(g, &gs));
	close(g);
	MUST(unlink(at("gone")));
	int c = app("cut");
	put(c, "12345678");
	MUST(fdatasync(c));
	MUST(ftruncate(c, 4));
	put(c, "abcd");
	pid_t pid = fork();
	if (pid == 0) {
		int k = app("child");
		put(k, "child;");
		MUST(fsync(k));
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	printf("%llu %llu\n", (unsigned long long)old.st_ino, (unsigned long long)gs.st_ino);
	return 0;
}
`

// TestDiskKeepsWhatWasSynced runs syncsC under the shim and cuts its
// files as a power loss does: each keeps what a sync reached (a rename
// keeps the file's record, a forked child's sync counts, a truncation
// lowers it), an unsynced file replacing a synced one keeps nothing, and
// the slots of the files that lost their name are free. Without the disk
// file the same program's files keep nothing: the record is the shim's.
func TestDiskKeepsWhatWasSynced(t *testing.T) {
	bin := compile(t, "syncs", syncsC)
	names := []string{"incr", "never", "base", "manifest", "cut", "child", "temp", "manifest.tmp", "gone"}
	play := func(t *testing.T, record bool) (string, *Disk, []int64) {
		dir := t.TempDir()
		d, err := NewDisk(filepath.Join(t.TempDir(), "disk"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		env, err := Env(newControl(t).Path())
		if err != nil {
			t.Fatal(err)
		}
		if record {
			env = append(env, DiskEnv(d.Path()))
		}
		cmd := exec.Command(bin, dir)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		var inos []int64
		for _, f := range strings.Fields(string(out)) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			inos = append(inos, n)
		}
		if len(inos) != 2 {
			t.Fatalf("output %q: want two inodes", out)
		}
		return dir, d, inos
	}
	cut := func(t *testing.T, dir string, d *Disk) (int64, map[string]string) {
		var paths []string
		for _, n := range names {
			paths = append(paths, filepath.Join(dir, n))
		}
		lost, err := d.LoseUnsynced(paths)
		if err != nil {
			t.Fatal(err)
		}
		left := map[string]string{}
		for _, n := range names {
			if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
				left[n] = string(b)
			}
		}
		return lost, left
	}

	t.Run("recorded", func(t *testing.T) {
		dir, d, inos := play(t, true)
		lost, left := cut(t, dir, d)
		want := map[string]string{"incr": "synced;", "never": "", "base": "base;", "manifest": "", "cut": "1234", "child": "child;"}
		for n, w := range want {
			if left[n] != w {
				t.Errorf("%s after the power loss: %q, want %q", n, left[n], w)
			}
		}
		if len(left) != len(want) {
			t.Errorf("files left: %v, want those of %v", left, want)
		}
		if w := int64(len("unsynced;") + len("lost;") + len("new;") + len("abcd")); lost != w {
			t.Errorf("lost %d bytes, want %d", lost, w)
		}
		// The slots taken are those of the synced files that keep a
		// name; a freed inode may be given to a later file, whose slot
		// it then is.
		synced := map[int64]string{}
		for _, n := range []string{"incr", "base", "cut", "child"} {
			fi, err := os.Stat(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			synced[int64(fi.Sys().(*syscall.Stat_t).Ino)] = n
		}
		taken := 0
		for s := 0; s < DiskSlots; s++ {
			ino := d.w[diskHead+s*diskSlot+1]
			if ino == 0 {
				continue
			}
			taken++
			if _, ok := synced[ino]; !ok {
				what := "an unknown file"
				for i, gone := range inos {
					if ino == gone {
						what = []string{"the file renamed over", "the file unlinked"}[i]
					}
				}
				t.Errorf("a slot still holds %s (inode %d)", what, ino)
			}
		}
		if taken != len(synced) {
			t.Errorf("%d slots taken, want %d (one for each synced file with a name)", taken, len(synced))
		}
		if lost, err := d.LoseUnsynced([]string{filepath.Join(dir, "incr")}); err != nil || lost != 0 {
			t.Errorf("a second cut lost %d (%v), want nothing", lost, err)
		}
	})
	t.Run("not recorded", func(t *testing.T) {
		dir, d, _ := play(t, false)
		_, left := cut(t, dir, d)
		for n, b := range left {
			if b != "" {
				t.Errorf("%s kept %q with no record of its syncs, want nothing", n, b)
			}
		}
	})
	t.Run("overflow", func(t *testing.T) {
		d, err := NewDisk(filepath.Join(t.TempDir(), "disk"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		d.w[1] = 1 // as the shim marks a table with no free slot
		if _, err := d.LoseUnsynced(nil); err != ErrDiskOverflow {
			t.Fatalf("LoseUnsynced on an overflowed table: %v, want ErrDiskOverflow", err)
		}
	})
}
