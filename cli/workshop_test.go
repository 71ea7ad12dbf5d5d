package cli

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestWorkshopWaitKeepsNoReadBehind: a step that goes on by itself leaves
// no read of stdin behind, so the next Enter goes to the next step; Ctrl-C
// (ctx) ends a wait; stdin's end goes on without waiting.
func TestWorkshopWaitKeepsNoReadBehind(t *testing.T) {
	in, enter := io.Pipe()
	w, stop := newWorkshop(io.Discard, in)
	defer stop()
	ctx := context.Background()

	expired := make(chan time.Time)
	close(expired)
	if got := w.wait(ctx, expired); got != "(going on)" {
		t.Fatalf("a step past its time: %q, want (going on)", got)
	}
	// One Enter, then the next step waits: it must see that Enter.
	go enter.Write([]byte("\n"))
	done := make(chan string, 1)
	go func() { done <- w.wait(ctx, nil) }()
	select {
	case got := <-done:
		if got != "" {
			t.Fatalf("after Enter: %q, want nothing", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Enter after a step that went on by itself was taken by another read")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	go func() { done <- w.wait(cancelled, nil) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C did not end the wait")
	}

	enter.Close()
	for range 2 { // every later step goes on
		if got := w.wait(ctx, nil); got != "(no input: going on)" {
			t.Fatalf("after stdin's end: %q", got)
		}
	}
}
