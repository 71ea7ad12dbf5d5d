package env

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestOnFreePort: a start that loses its port (the server's words for
// it marked by clash) is tried again on a new port, up to portTries
// starts; any other failure ends it at once.
func TestOnFreePort(t *testing.T) {
	var ports []int
	err := onFreePort(context.Background(), func(port int) error {
		ports = append(ports, port)
		if len(ports) < 3 {
			return clash(fmt.Errorf("FATAL: could not bind IPv4 address \"127.0.0.1\": Address already in use"), "could not bind")
		}
		return nil
	})
	if err != nil || len(ports) != 3 || ports[0] == 0 {
		t.Errorf("started after %v: %v", ports, err)
	}
	tries := 0
	err = onFreePort(context.Background(), func(int) error { tries++; return errors.Join(errPortInUse, errors.New("taken")) })
	if !errors.Is(err, errPortInUse) || tries != portTries {
		t.Errorf("always taken: %d tries, %v", tries, err)
	}
	tries = 0
	err = onFreePort(context.Background(), func(int) error { tries++; return errors.New("no such binary") })
	if err == nil || errors.Is(err, errPortInUse) || tries != 1 {
		t.Errorf("another failure: %d tries, %v", tries, err)
	}
}
