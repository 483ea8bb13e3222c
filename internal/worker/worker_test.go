package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/errs"
)

// msg is the fake session's message.
type msg struct {
	id        int64
	held      bool
	claimedAt time.Time
}

// fake is a session over n messages held in memory; it records what the
// runtime asks of it.
type fake struct {
	msgs   []msg
	ptrs   []*msg
	handle func(ctx context.Context, m *msg) error
	done   chan struct{}

	mu        sync.Mutex
	next      int
	inHand    int  // handed out and not yet handled
	overAsked bool // a Take asked for more than the idle handlers
	slots     int
	batches   []int
	completed int
	cancelled []int64
	retried   int
}

func newFake(n, slots int, handle func(ctx context.Context, m *msg) error) *fake {
	f := &fake{msgs: make([]msg, n), ptrs: make([]*msg, n), handle: handle, done: make(chan struct{}), slots: slots}
	for i := range f.msgs {
		f.msgs[i].id = int64(i + 1)
		f.ptrs[i] = &f.msgs[i]
	}
	return f
}

func (f *fake) Done() <-chan struct{}       { return f.done }
func (f *fake) Err() error                  { return nil }
func (f *fake) Close(context.Context) error { return nil }

func (f *fake) Take(ctx context.Context, max int, wait bool) ([]*msg, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inHand+max > f.slots {
		f.overAsked = true
	}
	if f.next == len(f.ptrs) {
		return nil, errs.ErrEmpty
	}
	end := min(f.next+max, len(f.ptrs))
	out := f.ptrs[f.next:end:end]
	now := time.Now()
	for _, m := range out {
		m.claimedAt = now
	}
	f.inHand += len(out)
	f.next = end
	return out, nil
}

func (f *fake) Start(ctx context.Context, m *msg, d time.Duration) error  { m.held = false; return nil }
func (f *fake) Extend(ctx context.Context, m *msg, d time.Duration) error { return nil }
func (f *fake) GiveBack(ctx context.Context, m *msg) error                { return nil }
func (f *fake) Snooze(ctx context.Context, m *msg, d time.Duration) error { return nil }
func (f *fake) Cancel(ctx context.Context, m *msg, cause error) error {
	f.mu.Lock()
	f.cancelled = append(f.cancelled, m.id)
	f.mu.Unlock()
	return nil
}
func (f *fake) Dead(ctx context.Context, m *msg, cause error) error { return nil }
func (f *fake) Retry(ctx context.Context, m *msg, cause error) error {
	f.mu.Lock()
	f.retried++
	f.mu.Unlock()
	return nil
}

func (f *fake) Complete(ctx context.Context, ms []*msg) (int, error) {
	f.mu.Lock()
	f.batches = append(f.batches, len(ms))
	f.completed += len(ms)
	f.mu.Unlock()
	return len(ms), nil
}

func (f *fake) Completed(int) {}

func (f *fake) MessageID(m *msg) int64       { return m.id }
func (f *fake) Held(m *msg) bool             { return m.held }
func (f *fake) ClaimedAt(m *msg) time.Time   { return m.claimedAt }
func (f *fake) ClaimBegan(m *msg) time.Time  { return m.claimedAt }
func (f *fake) Timeout(m *msg) time.Duration { return 0 }
func (f *fake) Handle(ctx context.Context, m *msg) error {
	err := f.handle(ctx, m)
	f.mu.Lock()
	f.inHand--
	f.mu.Unlock()
	return err
}
func (f *fake) Begin(ctx context.Context, m *msg) (context.Context, trace.Span) {
	return ctx, trace.SpanFromContext(ctx)
}
func (f *fake) End(trace.Span, *msg, error, time.Time) {}

type nopUsers struct{}

func (nopUsers) In()  {}
func (nopUsers) Out() {}

// config is a draining worker of f with slots handlers, and its registry,
// which sees the messages in cancelled as cancelled.
func config(f *fake, slots int, cancelled *sync.Map) Config[*msg] {
	var tasks sync.WaitGroup
	reg := NewRegistry(RegistryConfig{Lease: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tasks: &tasks,
		CancelRequested: func(_ context.Context, id int64) (bool, error) {
			_, ok := cancelled.Load(id)
			return ok, nil
		},
		QueuePaused: func(context.Context, string) (bool, error) { return false, nil },
		Announce:    func(int64) {},
	})
	return Config[*msg]{Queue: "q", Concurrency: slots, Visibility: 30 * time.Second, Grace: time.Second, Drain: true,
		PollInterval: 10 * time.Millisecond, Lease: time.Second, Logger: reg.cfg.Logger, Registry: reg,
		Open:      func(context.Context) (Session[*msg], error) { return f, nil },
		Listen:    func(context.Context) error { return nil },
		Notifying: nopUsers{},
	}
}

// TestClaimsForIdleHandlers: a worker never claims more than its idle
// handlers, runs every message, and acknowledges them in batches.
func TestClaimsForIdleHandlers(t *testing.T) {
	const n, slots = 200, 4
	f := newFake(n, slots, func(context.Context, *msg) error { time.Sleep(100 * time.Microsecond); return nil })
	if err := Work(context.Background(), config(f, slots, &sync.Map{})); err != nil {
		t.Fatal(err)
	}
	if f.completed != n {
		t.Fatalf("completed %d messages, want %d", f.completed, n)
	}
	if f.overAsked {
		t.Fatal("a claim asked for more messages than there were idle handlers")
	}
}

// TestCancelEndsCancelled: a message cancelled while it runs has its
// handler's context cancelled with ErrCancelled and ends cancelled, even
// when the handler returns nil.
func TestCancelEndsCancelled(t *testing.T) {
	var cancelled sync.Map
	var cfg Config[*msg]
	f := newFake(2, 1, func(ctx context.Context, m *msg) error {
		if m.id != 1 {
			return nil
		}
		cancelled.Store(m.id, true)
		cfg.Registry.OnCancel(strconv.FormatInt(m.id, 10))
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), errs.ErrCancelled) {
			t.Errorf("cause %v, want ErrCancelled", context.Cause(ctx))
		}
		return nil
	})
	cfg = config(f, 1, &cancelled)
	if err := Work(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(f.cancelled) != 1 || f.cancelled[0] != 1 || f.completed != 1 {
		t.Fatalf("cancelled %v, completed %d: want [1] and 1", f.cancelled, f.completed)
	}
}

// TestFailedRunRetried: a handler's error retries its message.
func TestFailedRunRetried(t *testing.T) {
	f := newFake(3, 2, func(_ context.Context, m *msg) error {
		if m.id == 2 {
			return errors.New("boom")
		}
		return nil
	})
	if err := Work(context.Background(), config(f, 2, &sync.Map{})); err != nil {
		t.Fatal(err)
	}
	if f.retried != 1 || f.completed != 2 {
		t.Fatalf("retried %d, completed %d: want 1 and 2", f.retried, f.completed)
	}
}

// BenchmarkWork measures the runtime alone: a worker drains b.N messages
// of an in-memory session with a handler that does nothing. Its
// allocations per message are the runtime's own.
func BenchmarkWork(b *testing.B) {
	for _, slots := range []int{1, 8} {
		b.Run("handlers="+strconv.Itoa(slots), func(b *testing.B) {
			f := newFake(b.N, slots, func(context.Context, *msg) error { return nil })
			cfg := config(f, slots, &sync.Map{})
			b.ReportAllocs()
			b.ResetTimer()
			if err := Work(context.Background(), cfg); err != nil {
				b.Fatal(err)
			}
		})
	}
}
