package sqlbase

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGate: one writer at a time; a waiter gives up with its context and
// leaves the gate as it was; leaving lets the next one in.
func TestGate(t *testing.T) {
	g := NewGate()
	leave, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second writer entered while the first was in (%v)", err)
	}
	entered := make(chan func(), 1)
	go func() {
		l, err := g.Enter(context.Background())
		if err != nil {
			t.Error(err)
		}
		entered <- l
	}()
	select {
	case <-entered:
		t.Fatal("a writer entered before the first left")
	case <-time.After(20 * time.Millisecond):
	}
	leave()
	(<-entered)()
	if leave, err := g.Enter(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		leave()
	}
}
