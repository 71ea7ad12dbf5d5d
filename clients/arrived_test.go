package clients

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestArrivedReplyIsRead: a reply that reached the socket before the
// read looked is read, though the read's deadline passed meanwhile (a
// client stopped past its request timeout), where the plain connection
// says the node did not answer; a node that sent nothing still times
// out.
func TestArrivedReplyIsRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				if n, _ := c.Read(buf); n > 0 && string(buf[:n]) == "PING\r\n" {
					_, _ = c.Write([]byte("+PONG\r\n"))
				}
				time.Sleep(time.Second)
			}()
		}
	}()
	read := func(t *testing.T, wrap bool, ask string) (string, error) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if wrap {
			c = arrivedConn{c}
			// go-redis checks a pooled connection's health through its
			// syscall.Conn; a wrapper without one is taken for healthy.
			if sc, ok := c.(syscall.Conn); !ok {
				t.Fatal("arrivedConn is no syscall.Conn")
			} else if _, err := sc.SyscallConn(); err != nil {
				t.Fatalf("SyscallConn: %v", err)
			}
		}
		if _, err := c.Write([]byte(ask)); err != nil {
			t.Fatal(err)
		}
		// The deadline passes while the reply arrives and nobody reads:
		// the process is stopped, as far as this read can tell.
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		return string(buf[:n]), err
	}
	if got, err := read(t, false, "PING\r\n"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("plain connection: read %q, %v; want the deadline's error (the case arrivedConn is for)", got, err)
	}
	if got, err := read(t, true, "PING\r\n"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("arrivedConn: read %q, %v; want the reply that arrived", got, err)
	}
	if got, err := read(t, true, "QUIET\r\n"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("arrivedConn, no reply sent: read %q, %v; want a timeout", got, err)
	}
}
