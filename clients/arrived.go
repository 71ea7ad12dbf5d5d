// arrived.go: a connection whose read deadline never turns a reply that
// already arrived into "did not answer".

package clients

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// lookAgain is how long a read whose deadline had passed looks at the
// socket once more: long enough for the kernel to hand over what it
// holds, short enough that a node that really did not answer costs the
// caller nothing it would notice.
const lookAgain = time.Millisecond

// dialReadsArrived dials a Redis node (go-redis's Options.Dialer) as go-redis
// would, and wraps the connection in arrivedConn. The memcached lock
// wraps its own connection the same way.
func dialReadsArrived(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return arrivedConn{c}, nil
}

// arrivedConn reads what the kernel holds even when the read deadline
// passed before the read looked. Go's net package refuses a read whose
// deadline has passed without looking at the socket; a client process
// stopped by SIGSTOP past its per-request timeout wakes with its timer
// and its reply both due, and which Go handles first is chance. A real
// node answered, so the reply is read: a timeout is a node that did not
// answer, never one whose answer waited in the buffer while its client
// was stopped.
type arrivedConn struct{ net.Conn }

// SyscallConn is the TCP connection's own: go-redis checks a pooled
// connection's health through it before it reuses one (a node that
// restarted closed it), and takes a connection without it for healthy.
func (c arrivedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c arrivedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		if c.Conn.SetReadDeadline(time.Now().Add(lookAgain)) == nil {
			return c.Conn.Read(b)
		}
	}
	return n, err
}
