package clockshim

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnvDisk names the file in which the shim keeps what a sync put on the
// disk (read by the shim; see clockshim.c, "The disk").
const EnvDisk = "LOCKSIM_DISK_FILE"

// DiskLayout is the version of the disk file's layout, in its first word.
const DiskLayout = 1

// diskHead and diskSlot are the words of the head and of one slot;
// DiskSlots is how many files one disk file follows.
const (
	diskHead  = 4
	diskSlot  = 4
	DiskSlots = 256
)

// DiskFileSize is the size of a disk file in bytes.
const DiskFileSize = (diskHead + DiskSlots*diskSlot) * 8

// Disk is the harness's side of the shim's sync bookkeeping for one
// process (and its children): for each file the process synced (fsync,
// fdatasync), the length it had when the sync began. What lies past that
// length had reached only the OS page cache, which a power loss takes
// away; LoseUnsynced cuts it off. Read it only once the process is dead:
// a live one may be writing the table.
type Disk struct {
	path string
	mem  []byte
	w    []int64
}

// NewDisk creates (or empties) the disk file at path, for a process
// started with DiskEnv(path).
func NewDisk(path string) (*Disk, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("disk file: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(DiskFileSize); err != nil {
		return nil, fmt.Errorf("disk file: %w", err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, DiskFileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("disk file: mmap %s: %w", path, err)
	}
	d := &Disk{path: path, mem: mem, w: unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), DiskFileSize/8)}
	atomic.StoreInt64(&d.w[2], DiskSlots)
	atomic.StoreInt64(&d.w[0], DiskLayout) // last: the shim maps a file whose version is set
	return d, nil
}

// DiskEnv is the environment entry that has the shim (loaded by Env's
// LD_PRELOAD) keep its sync bookkeeping in the disk file at path.
func DiskEnv(path string) string { return EnvDisk + "=" + path }

// Path is the disk file's path (the value of LOCKSIM_DISK_FILE).
func (d *Disk) Path() string { return d.path }

// Synced is how many bytes of file fi the disk holds for sure: the
// length it had when its last sync began, and false when no sync of it
// was recorded (a file never synced).
func (d *Disk) Synced(fi os.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Ino == 0 {
		return 0, false
	}
	var n int64
	found := false
	for i := 0; i < DiskSlots; i++ {
		s := d.w[diskHead+i*diskSlot:]
		if atomic.LoadInt64(&s[1]) == int64(st.Ino) && atomic.LoadInt64(&s[0]) == int64(st.Dev) {
			n, found = max(n, atomic.LoadInt64(&s[2])), true // two threads may have claimed a slot each
		}
	}
	return n, found
}

// ErrDiskOverflow says the shim found no free slot for a file it synced:
// the table does not know what the disk holds.
var ErrDiskOverflow = errors.New("the shim's disk table overflowed: it no longer knows what was synced")

// LoseUnsynced cuts each file of paths back to what the disk holds for
// sure (Synced; nothing for a file never synced), as a power loss leaves
// an append-only file, and returns how many bytes it cut. A path that does
// not exist is skipped. The process writing them must be dead.
func (d *Disk) LoseUnsynced(paths []string) (int64, error) {
	if atomic.LoadInt64(&d.w[1]) != 0 {
		return 0, ErrDiskOverflow
	}
	var lost int64
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return lost, fmt.Errorf("power loss: %w", err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		keep, _ := d.Synced(fi)
		if fi.Size() <= keep {
			continue
		}
		if err := os.Truncate(p, keep); err != nil {
			return lost, fmt.Errorf("power loss: %w", err)
		}
		lost += fi.Size() - keep
	}
	return lost, nil
}

// Close unmaps the file (the file stays). The Disk must not be used after.
func (d *Disk) Close() error {
	if d.mem == nil {
		return nil
	}
	err := unix.Munmap(d.mem)
	d.mem, d.w = nil, nil
	return err
}
