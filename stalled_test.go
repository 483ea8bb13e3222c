package baton_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestStalledServer: a server that stops answering once the client is
// connected (every byte held both ways, nothing closed: a stopped server,
// a network that drops packets, a stalled proxy) fails a call whose
// context has no deadline within Options.StatementTimeout, with an error
// naming the server, instead of hanging it for ever: ErrNoAnswer, or a
// connect error when the pool gave up the silent connection (pgx pings a
// connection it reuses, and database/sql then tries a new one, bounded by
// the connect timeout: how a multi-host DSN fails over).
func TestStalledServer(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no server to stop answering")
		pdsn, p := viaProxy(t, dsn)
		// A long lease: no heartbeat takes the pool's idle connection
		// while the test looks, so the enqueue's statement, not a new
		// connection's handshake, is what the server leaves unanswered.
		c := openDSN(t, pdsn, baton.Options{StatementTimeout: time.Second, Lease: time.Minute})
		t.Cleanup(p.Heal) // before the client's Close
		if _, err := c.Enqueue(ctxT(t), "stalled", []byte("before")); err != nil {
			t.Fatal(err)
		}
		// Idle connections in the pool for the calls below (the enqueue's
		// wake-up, sent in the background, may hold one).
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Stats(ctxT(t), "stalled"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		p.Partition()
		for _, call := range []struct {
			name string
			run  func(context.Context) error
		}{
			{"enqueue", func(ctx context.Context) error {
				_, err := c.Enqueue(ctx, "stalled", []byte("during"))
				return err
			}},
			{"queue stats", func(ctx context.Context) error {
				_, err := c.Stats(ctx, "stalled")
				return err
			}},
			{"locks", func(ctx context.Context) error {
				_, err := c.Locks(ctx)
				return err
			}},
		} {
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- call.run(context.Background()) }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("%s through a stalled server: no error", call.name)
				}
				if addr := p.Addr(); !strings.Contains(err.Error(), addr) {
					t.Errorf("%s: the error does not name the server %s: %v", call.name, addr, err)
				}
				t.Logf("%s: failed after %v: %v", call.name, time.Since(start).Round(time.Millisecond), err)
			case <-time.After(20 * time.Second):
				t.Fatalf("%s with context.Background() still hangs 20s after the server stopped answering", call.name)
			}
		}
	})
}
