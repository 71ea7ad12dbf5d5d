package env

// port.go: one way to start a server on a free port. A port found free
// can be taken by another process before the server binds it: the start
// then fails with errPortInUse, and is tried again on a new port.

import (
	"context"
	"errors"
	"net"
	"strings"
)

// errPortInUse marks a start that lost its port to another process.
var errPortInUse = errors.New("port in use")

// portTries bounds the starts of one server after clashes.
const portTries = 5

// freePort returns a TCP port on 127.0.0.1 that is free right now.
func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1,
// holding each until all are found.
func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// onFreePort calls start with a free port until it starts, fails for
// another reason than a clash (errPortInUse), or has tried portTries
// times.
func onFreePort(ctx context.Context, start func(port int) error) error {
	return retryClash(ctx, func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		return start(port)
	})
}

// retryClash calls try until it succeeds, fails for another reason than
// a clash (errPortInUse), or has tried portTries times.
func retryClash(ctx context.Context, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !errors.Is(err, errPortInUse) || attempt >= portTries || ctx.Err() != nil {
			return err
		}
	}
}

// clash marks err as a lost port when the server's message says so
// (its log's words for it, such as PostgreSQL's "could not bind").
func clash(err error, says string) error {
	if err != nil && strings.Contains(err.Error(), says) {
		return errors.Join(errPortInUse, err)
	}
	return err
}
