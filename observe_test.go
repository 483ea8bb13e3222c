package baton_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// lostCounter is an Observer that counts lost sessions.
type lostCounter struct{ n atomic.Int32 }

func (*lostCounter) HandlerDone(string, string, string, time.Duration) {}
func (*lostCounter) LockWaited(string, time.Duration, bool)            {}
func (*lostCounter) Deadlock()                                         {}
func (l *lostCounter) SessionLost()                                    { l.n.Add(1) }

// TestObserverHearsLostSessions: a session lost for want of renewals is
// reported to the client's Observer once.
func TestObserverHearsLostSessions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		obs := &lostCounter{}
		c := openDSN(t, dsn, baton.Options{Lease: time.Second, Observer: obs})
		s := session(t, c)
		baton.SwitchRenewals(c, true)
		waitLost(t, s)
		// The observer hears it right after Done closes.
		for deadline := time.Now().Add(10 * time.Second); obs.n.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the observer never heard the lost session")
			}
			time.Sleep(time.Millisecond)
		}
		if got := obs.n.Load(); got != 1 {
			t.Fatalf("observer heard %d lost sessions, want 1", got)
		}
	})
}

// TestTraceContextTravels: an enqueue inside a span makes a producer span;
// the handler's run, in another client (another process as far as the
// message knows), is a consumer span in the same trace, child of the
// enqueue's, whichever way the message was enqueued (Enqueue, EnqueueTx)
// and also after a retry.
func TestTraceContextTravels(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		producer := openDSN(t, dsn, baton.Options{TracerProvider: tp})
		consumer := openDSN(t, dsn, baton.Options{TracerProvider: tp, Retry: baton.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})

		ctx, root := tp.Tracer("test").Start(context.Background(), "request")
		if _, err := producer.Enqueue(ctx, "traced", []byte("a")); err != nil {
			t.Fatal(err)
		}
		db := batontest.SQLDB(t, dsn)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := producer.EnqueueTx(ctx, tx, "traced", []byte("b")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		root.End()
		// And one without a trace: its handler's span starts a trace.
		if _, err := producer.Enqueue(context.Background(), "traced", []byte("c")); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		seen := map[string]trace.SpanContext{}
		runs := map[string]int{}
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- consumer.Work(wctx, "traced", func(ctx context.Context, m *baton.Message) error {
				mu.Lock()
				defer mu.Unlock()
				p := string(m.Payload)
				seen[p] = trace.SpanContextFromContext(ctx)
				runs[p]++
				if p == "a" && runs[p] == 1 {
					return context.DeadlineExceeded // retried: the next run is traced too
				}
				return nil
			}, baton.WorkerOptions{})
		}()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			n := len(seen) + runs["a"]
			mu.Unlock()
			if n == 5 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("handled %v", runs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		<-done
		traceID := root.SpanContext().TraceID()
		byName := map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range exp.GetSpans().Snapshots() {
			byName[s.Name()] = append(byName[s.Name()], s)
		}
		enq := byName["baton.enqueue traced"]
		proc := byName["baton.process traced"]
		if len(enq) != 3 || len(proc) != 4 {
			t.Fatalf("%d enqueue spans and %d process spans, want 3 and 4", len(enq), len(proc))
		}
		parents := map[trace.SpanID]bool{}
		for _, s := range enq {
			if s.SpanKind() != trace.SpanKindProducer {
				t.Fatalf("enqueue span kind %v", s.SpanKind())
			}
			if s.SpanContext().TraceID() == traceID {
				if s.Parent().SpanID() != root.SpanContext().SpanID() {
					t.Fatal("the enqueue span is not a child of the request's")
				}
				parents[s.SpanContext().SpanID()] = true
			}
		}
		if len(parents) != 2 {
			t.Fatalf("%d enqueue spans in the request's trace, want 2", len(parents))
		}
		inTrace := 0
		for _, s := range proc {
			if s.SpanKind() != trace.SpanKindConsumer {
				t.Fatalf("process span kind %v", s.SpanKind())
			}
			if s.SpanContext().TraceID() == traceID {
				inTrace++
				if !parents[s.Parent().SpanID()] {
					t.Fatal("a handler's span is not a child of its message's enqueue span")
				}
			}
		}
		if inTrace != 3 { // a twice, b once
			t.Fatalf("%d handler spans in the request's trace, want 3", inTrace)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["a"].TraceID() != traceID || seen["b"].TraceID() != traceID || seen["c"].TraceID() == traceID || !seen["c"].IsValid() {
			t.Fatal("the handler's context does not carry its span")
		}
	})
}

// TestTraceParentForms: the W3C traceparent forms a message may carry.
func TestTraceParentForms(t *testing.T) {
	for tp, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":     true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00":     true,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz": true, // a later version may add fields
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz": false,
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":     false,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":     false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":     false,
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01":      false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":        false,
		"":        false,
		"garbage": false,
	} {
		if got := baton.TraceParentValid(tp); got != want {
			t.Errorf("traceparent %q: valid %v, want %v", tp, got, want)
		}
	}
}
