package sqlbase

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errFull = errors.New("too many clients")

func isFull(err error) bool { return errors.Is(err, errFull) }

// TestWhileFull: a connection refused for lack of slots is tried again
// until it works; any other error, or the context's end, stops at once.
func TestWhileFull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tries := 0
	n, err := WhileFull(ctx, isFull, func(context.Context) (int, error) {
		tries++
		if tries < 4 {
			return 0, errFull
		}
		return 7, nil
	})
	if err != nil || n != 7 || tries != 4 {
		t.Fatalf("got %d, %v after %d tries; want 7 after 4", n, err, tries)
	}

	other := errors.New("password authentication failed")
	tries = 0
	if _, err := WhileFull(ctx, isFull, func(context.Context) (int, error) { tries++; return 0, other }); !errors.Is(err, other) || tries != 1 {
		t.Fatalf("another error: %v after %d tries, want it after 1", err, tries)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	tries = 0
	if _, err := WhileFull(short, isFull, func(context.Context) (int, error) { tries++; return 0, errFull }); !errors.Is(err, errFull) || tries < 2 {
		t.Fatalf("a server full until the deadline: %v after %d tries, want the refusal after several", err, tries)
	}
}
