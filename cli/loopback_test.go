package cli

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoopbackOnly runs a story with five Redis servers, PostgreSQL,
// toxiproxy and two client processes, lists every TCP and UDP socket of
// the harness and of every process below it while the story runs
// (/proc/PID/fd against /proc/net/{tcp,tcp6,udp,udp6}), and fails on any
// address, local or remote, outside 127.0.0.0/8 and ::1.
func TestLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	cmd := exec.Command(os.Args[0], "run", "redlock-pause-during-acquire", "-q", "--out", filepath.Join(t.TempDir(), "run"))
	cmd.Env = append(os.Environ(), simMainEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[string]string{} // "local -> remote" to the process that had it
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("sim run: %v", err)
			}
			running = false
		case <-time.After(20 * time.Millisecond):
			for _, pid := range subtree(cmd.Process.Pid) {
				for _, s := range sockets(t, pid) {
					seen[s] = procName(pid)
				}
			}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("saw only %d sockets; the test did not watch the run", len(seen))
	}
	bad := 0
	for s, who := range seen {
		for _, addr := range strings.Split(s, " -> ") {
			if !loopback(addr) {
				bad++
				t.Errorf("%s has a socket %s: %s is not loopback", who, s, addr)
			}
		}
	}
	t.Logf("%d distinct sockets, all on loopback", len(seen)-bad)
}

// subtree lists pid and every process below it.
func subtree(root int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		if ppid, err := strconv.Atoi(f[1]); err == nil && len(f) > 1 {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func procName(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(b)), pid)
}

// sockets lists the TCP and UDP sockets pid holds as "local -> remote".
func sockets(t *testing.T, pid int) []string {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			out = append(out, decodeAddr(t, f[1])+" -> "+decodeAddr(t, f[2]))
		}
	}
	return out
}

// decodeAddr turns /proc/net's "0100007F:1F90" (the address in the
// kernel's byte order, 32-bit words little-endian) into "127.0.0.1:8080".
func decodeAddr(t *testing.T, s string) string {
	host, port, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(host)
	if err != nil {
		t.Fatalf("bad address %q", s)
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	p, _ := strconv.ParseUint(port, 16, 16)
	return net.JoinHostPort(net.IP(b).String(), strconv.FormatUint(p, 10))
}

// loopback says whether addr is on loopback; a remote of all zeros (a
// listening or unconnected socket has no peer) counts as none.
func loopback(addr string) bool {
	host, port, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsUnspecified() && port == "0" {
		return true // no peer
	}
	return ip.IsLoopback()
}

// TestDecodeAddr: /proc/net's byte order, and what counts as loopback.
func TestDecodeAddr(t *testing.T) {
	cases := []struct {
		in, want string
		loop     bool
	}{
		{"0100007F:1F90", "127.0.0.1:8080", true},
		{"00000000:1F90", "0.0.0.0:8080", false}, // listening on every interface
		{"00000000:0000", "0.0.0.0:0", true},     // no peer
		{"0100A8C0:0050", "192.168.0.1:80", false},
		{"00000000000000000000000001000000:0050", "[::1]:80", true},
	}
	for _, c := range cases {
		got := decodeAddr(t, c.in)
		if got != c.want || loopback(got) != c.loop {
			t.Errorf("decodeAddr(%s) = %s (loopback %v), want %s (%v)", c.in, got, loopback(got), c.want, c.loop)
		}
	}
}
