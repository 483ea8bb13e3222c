package notify

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/errs"
)

type note struct{ ch, payload string }

// TestListeners: a notification reaches the listeners of its channel only,
// buffered while nobody reads; Close closes C and counts the listener
// out; a closed service takes no listener.
func TestListeners(t *testing.T) {
	s := New(nil, func(ch, p string) note { return note{ch, p} })
	closed := 0
	a, err := s.Listen([]string{"a"}, func() { closed++ })
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Listen([]string{"a", "b"}, nil)
	for _, n := range []note{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}} {
		s.Deliver(n.ch, n.payload)
	}
	for _, want := range []note{{"a", "1"}, {"a", "3"}} {
		if got := <-a.C(); got != want {
			t.Errorf("a got %v, want %v", got, want)
		}
	}
	for _, want := range []note{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
		if got := <-b.C(); got != want {
			t.Errorf("b got %v, want %v", got, want)
		}
	}
	a.Close()
	a.Close()
	if _, open := <-a.C(); open || closed != 1 {
		t.Errorf("after Close: C open %v, closed hook ran %d times", open, closed)
	}
	s.Close()
	if _, open := <-b.C(); open {
		t.Errorf("the service's Close left a listener open")
	}
	if _, err := s.Listen([]string{"a"}, nil); !errors.Is(err, errs.ErrClosed) {
		t.Errorf("Listen after Close: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct{ ch, payload string }{{"#x#", ""}, {"", ""}, {"ok", strings.Repeat("x", MaxPayload+1)}, {"ok", "\xff"}} {
		if err := Validate(c.ch, c.payload); !errors.Is(err, errs.ErrInvalid) {
			t.Errorf("Validate(%q, %d bytes) = %v, want ErrInvalid", c.ch, len(c.payload), err)
		}
	}
	if err := Validate("orders.new", strings.Repeat("x", MaxPayload)); err != nil {
		t.Errorf("a valid notification: %v", err)
	}
}
