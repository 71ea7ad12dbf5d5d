package env

import (
	"net"
	"testing"
	"time"
)

// TestPartitionKeepsTheServerSideOpen: a client that closes its end while
// partitioned is not seen by the server until the partition heals; with
// toxiproxy's timeout toxic the close went straight through.
func TestPartitionKeepsTheServerSideOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	n := NewNetwork()
	defer n.Close()
	l, err := n.AddLink("c1-pg", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", l.Listen)
	if err != nil {
		t.Fatal(err)
	}
	var server net.Conn
	select {
	case server = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy never connected upstream")
	}
	defer server.Close()
	for _, s := range []string{"upstream", "downstream"} {
		if err := l.AddToxic("partition-"+s, PartitionToxic, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	client.Close()

	// closed reports whether the server's read ends (EOF) within d.
	closed := func(d time.Duration) bool {
		_ = server.SetReadDeadline(time.Now().Add(d))
		buf := make([]byte, 16)
		n, err := server.Read(buf)
		if n > 0 {
			t.Fatalf("the server read %q through a partition", buf[:n])
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return false
		}
		return true
	}
	if closed(300 * time.Millisecond) {
		t.Fatal("the client's close reached the server through the partition")
	}
	for _, s := range []string{"upstream", "downstream"} {
		if err := l.RemoveToxic("partition-" + s); err != nil {
			t.Fatal(err)
		}
	}
	if !closed(5 * time.Second) {
		t.Fatal("healing the partition did not close the server's side")
	}
}
