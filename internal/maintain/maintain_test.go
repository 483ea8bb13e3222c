package maintain

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a slog handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) levels(name string) []slog.Level {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Level
	for _, rec := range r.records {
		if strings.Contains(rec.Message, name) {
			out = append(out, rec.Level)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Every service runs on its own: one blocked run does not hold up another.
func TestServicesRunIndependently(t *testing.T) {
	g := NewGroup(slog.New(&recorder{}))
	release := make(chan struct{})
	var blocked, fast atomic.Int32
	g.Add(Service{Name: "blocked", Interval: time.Millisecond, Timeout: time.Hour, Run: func(ctx context.Context) error {
		blocked.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}})
	g.Add(Service{Name: "fast", Interval: time.Millisecond, Run: func(context.Context) error { fast.Add(1); return nil }})
	g.Start()
	waitFor(t, "the fast service to run 5 times while the other is blocked", func() bool { return fast.Load() >= 5 })
	if n := blocked.Load(); n != 1 {
		t.Fatalf("blocked service ran %d times, want 1 (it never returned)", n)
	}
	close(release)
	g.Stop()
	if got := g.Names(); len(got) != 2 || got[0] != "blocked" || got[1] != "fast" {
		t.Fatalf("Names() = %v", got)
	}
}

// A failure streak is logged as one warning, then at debug level, and its
// end as information; nothing is dropped.
func TestFailuresLogged(t *testing.T) {
	rec := &recorder{}
	g := NewGroup(slog.New(rec))
	var runs atomic.Int32
	g.Add(Service{Name: "flaky job", Interval: time.Millisecond, Run: func(context.Context) error {
		n := runs.Add(1)
		if n <= 3 || n == 5 {
			return errors.New("database away")
		}
		return nil
	}})
	g.Start()
	waitFor(t, "six runs", func() bool { return runs.Load() >= 6 })
	g.Stop()
	got := rec.levels("flaky job")
	want := []slog.Level{slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelInfo}
	if len(got) < len(want) {
		t.Fatalf("log levels %v, want %v first", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("log levels %v, want %v first", got, want)
		}
	}
}

// Stop cancels a run in progress, waits for it, and logs nothing for it.
func TestStopCancelsRun(t *testing.T) {
	rec := &recorder{}
	g := NewGroup(slog.New(rec))
	started := make(chan struct{})
	var once sync.Once
	g.Add(Service{Name: "long job", Interval: time.Millisecond, Timeout: time.Hour, Run: func(ctx context.Context) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	}})
	g.Start()
	<-started
	g.Stop()
	if l := rec.levels("long job"); len(l) != 0 {
		t.Fatalf("stopping logged %d records for the cancelled run", len(l))
	}
}

func TestAddRejectsIncompleteService(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Add accepted a service without an interval")
		}
	}()
	NewGroup(slog.Default()).Add(Service{Name: "x", Run: func(context.Context) error { return nil }})
}

// An idle service does not run, however many intervals pass, until it is
// resumed; then it runs on its interval again.
func TestIdleServiceWaitsForResume(t *testing.T) {
	g := NewGroup(slog.New(&recorder{}))
	var idle atomic.Bool
	idle.Store(true)
	resume := make(chan struct{}, 1)
	var runs atomic.Int32
	g.Add(Service{Name: "scheduler", Interval: time.Millisecond, Run: func(context.Context) error {
		runs.Add(1)
		return nil
	}, Idle: idle.Load, Resume: resume})
	g.Start()
	defer g.Stop()
	time.Sleep(50 * time.Millisecond) // fifty intervals
	if n := runs.Load(); n != 0 {
		t.Fatalf("an idle service ran %d times", n)
	}
	idle.Store(false)
	resume <- struct{}{}
	waitFor(t, "runs after the resume", func() bool { return runs.Load() >= 3 })
}
