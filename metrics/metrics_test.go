package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/metrics"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestMetrics: handler outcomes, lock waits and deadlocks of an observed
// client, and the database's queue and lock gauges, as Prometheus text.
func TestMetrics(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		m := metrics.New()
		// A long lease: a session lost because a loaded machine renewed
		// it late (CI once did) would be counted, rightly, and this test
		// checks that nothing else counts one.
		c, err := baton.Open(ctx, b.NewDSN(t), baton.Options{Observer: m, Lease: 30 * time.Second,
			Retry: baton.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		m.Watch(c)
		for i, p := range []string{"ok", "ok", "bad", "flaky"} {
			kind := ""
			if i == 0 {
				kind = "welcome" // the kind label is the message's kind
			}
			if _, err := c.Enqueue(ctx, "jobs", []byte(p), baton.EnqueueOptions{MaxAttempts: 2, Kind: kind}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Enqueue(ctx, "later", []byte("x"), baton.EnqueueOptions{Delay: time.Hour}); err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int32
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- c.Work(wctx, "jobs", func(ctx context.Context, msg *baton.Message) error {
				defer handled.Add(1)
				switch string(msg.Payload) {
				case "bad":
					return baton.ErrPermanent
				case "flaky":
					return errors.New("flaky")
				}
				return nil
			}, baton.WorkerOptions{})
		}()
		for handled.Load() < 5 { // ok, ok, bad, flaky twice
			if ctx.Err() != nil {
				t.Fatalf("handled %d of 5 runs", handled.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		<-done

		// A deadlock between two sessions of the observed client.
		s1, _ := c.NewSession(ctx)
		s2, _ := c.NewSession(ctx)
		if _, err := s1.Lock(ctx, "dl", baton.Write, 0, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Lock(ctx, "dl", baton.Write, 0, "b"); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		go func() { _, err := s1.Lock(ctx, "dl", baton.Write, baton.Forever, "b"); errs <- err }()
		go func() { _, err := s2.Lock(ctx, "dl", baton.Write, baton.Forever, "a"); errs <- err }()
		if err := <-errs; !errors.Is(err, baton.ErrDeadlock) {
			t.Fatalf("want a deadlock, got %v", err)
		}

		text := ""
		for deadline := time.Now().Add(10 * time.Second); ; {
			text = scrape(t, m)
			if strings.Contains(text, `baton_queue_messages{queue="jobs",state="dead"} 2`) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, want := range []string{
			`baton_messages_processed_total{kind="",outcome="completed",queue="jobs"} 1`,
			`baton_messages_processed_total{kind="welcome",outcome="completed",queue="jobs"} 1`,
			`baton_messages_processed_total{kind="",outcome="retried",queue="jobs"} 1`,
			`baton_messages_processed_total{kind="",outcome="dead",queue="jobs"} 2`,
			`baton_handler_duration_seconds_count{kind="",queue="jobs"} 4`,
			`baton_handler_duration_seconds_count{kind="welcome",queue="jobs"} 1`,
			`baton_deadlocks_total 1`,
			`baton_lock_wait_seconds_count{namespace="dl"} 3`, // two immediate grants and the victim; the other still waits
			`baton_locks_held{mode="write",namespace="dl"} 2`,
			`baton_queue_messages{queue="jobs",state="ready"} 0`,
			`baton_queue_messages{queue="jobs",state="pending"} 0`,
			`baton_queue_messages{queue="jobs",state="dead"} 2`,
			`baton_queue_messages{queue="jobs",state="completed"} 2`,
			`baton_queue_messages{queue="jobs",state="retrying"} 0`,
			`baton_queue_messages{queue="later",state="scheduled"} 1`,
			`baton_sessions_lost_total 0`,
			`baton_scrape_errors_total 0`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if t.Failed() {
			t.Log(text)
		}
	})
}
