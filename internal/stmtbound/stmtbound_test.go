package stmtbound

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestContext: which deadline a statement gets. The caller's deadline is
// kept whatever it is; without one, the timeout, a marked wait plus
// Margin, or none (Unbounded, a negative timeout, no Bound).
func TestContext(t *testing.T) {
	b := New("postgres at h:5432")
	bg := context.Background()
	late, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	for _, tc := range []struct {
		name    string
		b       *Bound
		timeout time.Duration
		ctx     context.Context
		want    time.Duration // from now; -1: the context as it is
	}{
		{"default", b, 0, bg, Default},
		{"set", b, time.Second, bg, time.Second},
		{"caller's deadline", b, time.Second, late, -1},
		{"wait", b, time.Second, Wait(bg, 2*time.Second), 2*time.Second + Margin},
		{"unbounded", b, time.Second, Unbounded(bg), -1},
		{"off", b, -1, bg, -1},
		{"no bound", nil, 0, bg, -1},
	} {
		if tc.b != nil {
			tc.b.Set(tc.timeout)
		}
		start := time.Now()
		ctx, cancel := tc.b.Context(tc.ctx)
		dl, ok := ctx.Deadline()
		switch {
		case tc.want < 0 && ctx != tc.ctx:
			t.Errorf("%s: the context was changed", tc.name)
		case tc.want >= 0 && (!ok || dl.Sub(start) < tc.want || dl.Sub(start) > tc.want+time.Second):
			t.Errorf("%s: deadline in %v, want %v", tc.name, dl.Sub(start), tc.want)
		}
		cancel()
	}
}

// TestErr: only a statement the bound cut off gets ErrNoAnswer, naming
// the server; the caller's own deadline or cancellation keeps its error.
func TestErr(t *testing.T) {
	b := New("mysql server at h:3306")
	b.Set(time.Millisecond)
	bg := context.Background()
	ctx, cancel := b.Context(bg)
	defer cancel()
	<-ctx.Done()
	err := b.Err(bg, ctx, ctx.Err())
	if !errors.Is(err, ErrNoAnswer) || errors.Is(err, context.DeadlineExceeded) || err.Error() != "mysql server at h:3306: no answer from the database server within 1ms (the statement timeout)" {
		t.Errorf("cut off: %v", err)
	}
	mine, cancelMine := context.WithTimeout(bg, time.Millisecond)
	defer cancelMine()
	<-mine.Done()
	bctx, cancel2 := b.Context(mine)
	defer cancel2()
	if err := b.Err(mine, bctx, mine.Err()); err != context.DeadlineExceeded {
		t.Errorf("caller's deadline: %v", err)
	}
	if err := b.Err(bg, ctx, nil); err != nil {
		t.Errorf("no error: %v", err)
	}
}
