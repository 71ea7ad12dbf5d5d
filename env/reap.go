package env

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Each temp dir the harness makes carries its owner in its name:
// locksim-run-o<pid>.<start>-<random>, where start is the owner's start
// time (field 22 of /proc/PID/stat). The name is the mark, so there is no
// moment in which a dir exists unmarked, and a later start can tell a dead
// owner from a live one, and a reused pid from the original.

// dirPrefix starts the name of every temp dir the harness makes.
const dirPrefix = "locksim-"

// unmarkedAge is how old a locksim temp dir without an owner in its name
// must be before Reap takes it for the leftover of an older version.
const unmarkedAge = time.Hour

// ownerName matches the owner part of a temp dir's name.
var ownerName = regexp.MustCompile(`-o(\d+)\.(\d+)-[^-]*$`)

// ownerTag is this process's mark, for a temp dir's name.
func ownerTag() (string, error) {
	start, err := startTime(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("o%d.%s", os.Getpid(), start), nil
}

// statFields are the fields of /proc/PID/stat after the command name
// (which is in parentheses and may hold spaces): [0] is field 3, the
// state; [19] is field 22, the start time in clock ticks since boot.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// startTime is when the process started, in clock ticks since boot.
func startTime(pid int) (string, error) {
	f, err := statFields(pid)
	if err != nil {
		return "", err
	}
	return f[19], nil
}

// ownerAlive reads dir's owner from its name: ok is false when it has
// none; alive says whether that very process still runs.
func ownerAlive(dir string) (pid int, alive, ok bool) {
	m := ownerName.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return 0, false, false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false, false
	}
	f, err := statFields(pid)
	return pid, err == nil && f[19] == m[2] && f[0] != "Z", true
}

// ownerStarted is when dir's owner started, from its start time in clock
// ticks since boot; ok is false when it cannot be told.
func ownerStarted(dir string) (time.Time, bool) {
	m := ownerName.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "btime "); found {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			// USER_HZ is 100 on Linux.
			return time.Unix(boot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), true
		}
	}
	return time.Time{}, false
}

// Reaped is what Reap removed.
type Reaped struct {
	// Dirs are the temp dirs (and PostgreSQL's leftover shared memory
	// files) removed, each with why.
	Dirs []string
	// Bytes is their size.
	Bytes int64
	// Segments are the SysV shared memory segments removed (a PostgreSQL
	// killed with its harness leaves one).
	Segments []int
}

// Empty says nothing was left behind.
func (r Reaped) Empty() bool { return len(r.Dirs) == 0 && len(r.Segments) == 0 }

// ReapRoots are where the harness makes its temp dirs: TMPDIR and
// /dev/shm (PostgreSQL's data dirs).
func ReapRoots() []string { return []string{os.TempDir(), "/dev/shm"} }

// Reap removes what runs whose harness is gone left behind: every
// locksim temp dir under roots whose owner process no longer runs (or
// that has no owner and is older than an hour), and the SysV segment of
// any PostgreSQL that ran in one. A dir whose owner lives is never
// touched, nor is anything the user named (run directories are not temp
// dirs).
func Reap(roots ...string) (Reaped, error) {
	var r Reaped
	var errs []error
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
				continue
			}
			dir := filepath.Join(root, e.Name())
			why, dead := deadOwner(dir)
			if !dead {
				continue
			}
			segs, busy := leftSegments(dir)
			if busy || workingIn(dir) {
				// A server of the dead owner is still on its way out
				// (a backend that has not yet noticed its postmaster
				// died): the next start reaps it.
				continue
			}
			for _, id := range segs {
				if err := removeSegment(id); err != nil {
					errs = append(errs, fmt.Errorf("SysV segment %d: %w", id, err))
				} else {
					r.Segments = append(r.Segments, id)
				}
			}
			for _, f := range leftDSM(dir) {
				r.Bytes += du(f)
				if err := os.Remove(f); err == nil {
					r.Dirs = append(r.Dirs, f+" (PostgreSQL shared memory, mapped by no process)")
				}
			}
			r.Bytes += du(dir)
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Dirs = append(r.Dirs, dir+" ("+why+")")
		}
	}
	return r, errors.Join(errs...)
}

// deadOwner says whether dir's owner is gone, and how.
func deadOwner(dir string) (why string, dead bool) {
	pid, alive, ok := ownerAlive(dir)
	switch {
	case ok && !alive:
		return fmt.Sprintf("its owner, pid %d, is gone", pid), true
	case ok:
		return "", false
	}
	fi, err := os.Stat(dir)
	if err == nil && time.Since(fi.ModTime()) > unmarkedAge {
		return "no owner, older than " + unmarkedAge.String(), true
	}
	return "", false
}

// leftSegments finds the SysV shared memory segments a PostgreSQL (a
// postmaster, or initdb's single-user backend) that ran on dir/data left:
// PostgreSQL keys its segment on the data dir's inode number (the next
// free key from there), and a segment nobody is attached to whose creator
// is gone is garbage. busy says a segment is still in use.
func leftSegments(dir string) (ids []int, busy bool) {
	fi, err := os.Stat(filepath.Join(dir, "data"))
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, false
	}
	for key := int(st.Ino); key < int(st.Ino)+8; key++ {
		id, err := unix.SysvShmGet(key, 0, 0)
		if err != nil {
			continue
		}
		var ds unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
			continue
		}
		if ds.Nattch != 0 || running(int(ds.Cpid)) {
			return nil, true
		}
		ids = append(ids, id)
	}
	return ids, false
}

// running says whether pid is a live process (a zombie is not).
func running(pid int) bool {
	f, err := statFields(pid)
	return err == nil && f[0] != "Z"
}

// workingIn says whether a live process works in dir (its cwd is there).
func workingIn(dir string) bool {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		if d, err := os.Readlink(c); err == nil && (d == dir || strings.HasPrefix(d, dir+"/")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(c))); err == nil && running(pid) {
				return true
			}
		}
	}
	return false
}

// leftDSM finds the POSIX dynamic shared memory files (/dev/shm/PostgreSQL.N)
// that a PostgreSQL run by the owner of dir left: owned by the postgres
// user, modified while dir existed, and mapped by no process. (The
// clusters locksim runs keep theirs in the data dir; initdb's single-user
// backend does not, and leaves them when killed.)
func leftDSM(dir string) []string {
	born, ok := ownerStarted(dir)
	if !ok {
		return nil
	}
	files, _ := filepath.Glob("/dev/shm/PostgreSQL.*")
	var out []string
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.ModTime().Before(born.Add(-time.Second)) || mapped(f) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// mapped says whether any process maps path.
func mapped(path string) bool {
	maps, _ := filepath.Glob("/proc/[0-9]*/maps")
	for _, m := range maps {
		b, err := os.ReadFile(m)
		if err == nil && bytes.Contains(b, []byte(path)) {
			return true
		}
	}
	return false
}

func removeSegment(id int) error {
	_, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	return err
}

// du is the size of the files under dir.
func du(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
