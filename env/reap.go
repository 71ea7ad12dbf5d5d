package env

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ownerFile, in each temp dir the harness makes, names the process that
// made it: its pid and its start time (field 22 of /proc/PID/stat), so
// that a later start can tell a dead owner from a live one, and a reused
// pid from the original.
const ownerFile = ".locksim-owner"

// dirPrefix starts the name of every temp dir the harness makes.
const dirPrefix = "locksim-"

// unmarkedAge is how old a locksim temp dir without an owner file must be
// before Reap takes it for the leftover of an older version: younger ones
// may be between their creation and their marking.
const unmarkedAge = time.Hour

// markOwner writes this process as the owner of dir.
func markOwner(dir string) error {
	start, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), start)), 0o644)
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f[19], nil // field 22 overall; f[0] is field 3
}

// ownerAlive reads dir's owner file: ok is false when there is none; alive
// says whether that very process still runs.
func ownerAlive(dir string) (pid int, alive, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, false, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false, false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil {
		return 0, false, false
	}
	start, err := startTime(pid)
	return pid, err == nil && start == f[1], true
}

// Reaped is what Reap removed.
type Reaped struct {
	// Dirs are the temp dirs removed, each with why.
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
			if id, ok := leftSegment(dir); ok {
				if err := removeSegment(id); err != nil {
					errs = append(errs, fmt.Errorf("SysV segment %d: %w", id, err))
				} else {
					r.Segments = append(r.Segments, id)
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

// leftSegment reads the SysV segment id from a PostgreSQL data dir's
// postmaster.pid (line 7: key and id) under dir, when that postmaster is
// gone.
func leftSegment(dir string) (int, bool) {
	f, err := os.Open(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 7 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	fields := strings.Fields(lines[6])
	if err1 != nil || len(fields) != 2 {
		return 0, false
	}
	id, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, false
	}
	if unix.Kill(pid, 0) == nil {
		return 0, false // the postmaster still runs (it belongs to someone)
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || ds.Cpid != int32(pid) || ds.Nattch != 0 {
		return 0, false // gone already, not that postmaster's, or in use
	}
	return id, true
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
