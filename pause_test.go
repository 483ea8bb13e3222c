package baton_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestPauseStopsNewRuns: pausing a queue stops every process's workers
// from starting more messages (DESIGN, Jobs: in-flight work finishes,
// nothing new starts), by SetQueuePaused and by SetQueuePausedTx from another
// client: the running handler finishes, and the worker, which holds a
// claim only for what its handlers run, claims nothing more: the other
// messages stay in the queue, in their places, their attempts not
// counted; once the queue resumes (SetQueuePausedTx, SetQueuePaused) they all
// run. A worker whose client missed the resumption finds out from its
// next claim, which only a resumed queue answers.
func TestPauseStopsNewRuns(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db, ctx := batontest.SQLDB(t, dsn), ctxT(t)
		wc := openDSN(t, dsn, baton.Options{PollInterval: 100 * time.Millisecond})
		const n = 10
		var mu sync.Mutex
		var started []int64
		release := make(chan struct{})
		blockFirst := true
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- wc.Work(wctx, "pq", func(ctx context.Context, m *baton.Message) error {
				mu.Lock()
				started = append(started, m.ID)
				block := blockFirst
				blockFirst = false
				mu.Unlock()
				if block {
					<-release
				}
				return nil
			}, baton.WorkerOptions{Concurrency: 1})
		}()
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(started)
		}

		for round, tx := range []bool{false, true} {
			// In one transaction: the worker's first claim takes one to
			// run, and nothing ahead of its busy handler. Due a moment after the
			// commit: a claim that races the commit itself may find some
			// of the rows still locked (MariaDB releases the inserter's
			// row locks one by one after its commit; SKIP LOCKED passes
			// over those) and run a later message first, where this test
			// wants the batch's order.
			batch := make([]baton.NewMessage, n)
			for i := range batch {
				batch[i].Payload = []byte{byte('a' + i)}
				batch[i].Delay = 300 * time.Millisecond
			}
			ids, err := c.EnqueueMany(ctx, "pq", batch)
			if err != nil {
				t.Fatal(err)
			}
			base := count()
			waitForSeen(t, fmt.Sprintf("the first handler, in round %d", round), func() (bool, string) {
				n, st := count(), stats(t, c, "pq")
				return n == base+1 && st.Claimed == 1, fmt.Sprintf("%d started, %+v", n-base, st)
			})
			if tx {
				t0 := begin(t, db)
				if err := c.SetQueuePausedTx(ctx, t0, "pq", true); err != nil {
					t.Fatal(err)
				}
				endTx(t, t0, true)
			} else if err := c.SetQueuePaused(ctx, "pq", true); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the worker's client to know the queue paused", func() bool { return baton.QueuePausedHere(wc, "pq") })
			close(release)
			waitFor(t, "the running message settled, the others waiting", func() bool {
				st := stats(t, c, "pq")
				return st.Claimed == 0 && st.Ready == n-1
			})
			time.Sleep(200 * time.Millisecond)
			if got := count(); got != base+1 {
				t.Fatalf("round %d: %d messages started while the queue was paused, want the one that ran", round, got-base-1)
			}
			for _, id := range ids[1:] {
				if m := getMessage(t, c, id); m.Attempt != 0 || m.State != baton.StateReady {
					mu.Lock()
					ran := slices.Clone(started[base:])
					mu.Unlock()
					var all []string
					for _, id := range ids {
						m := getMessage(t, c, id)
						all = append(all, fmt.Sprintf("%d:%s/%d", id, m.State, m.Attempt))
					}
					t.Fatalf("round %d: message %d left %s with %d attempts, want ready with none (ran %v; messages %v)", round, id, m.State, m.Attempt, ran, all)
				}
			}

			if tx {
				if err := c.SetQueuePaused(ctx, "pq", false); err != nil {
					t.Fatal(err)
				}
			} else {
				t0 := begin(t, db)
				if err := c.SetQueuePausedTx(ctx, t0, "pq", false); err != nil {
					t.Fatal(err)
				}
				endTx(t, t0, true)
			}
			waitFor(t, "every message to run after the resumption", func() bool { return count() == base+n })
			mu.Lock()
			if got := started[base:]; !slices.Equal(got, ids) {
				t.Fatalf("round %d: ran %v, want %v (in their places)", round, got, ids)
			}
			blockFirst, release = true, make(chan struct{})
			mu.Unlock()
		}

		// A missed resumption: the worker's client is deaf while the queue
		// resumes; its next claim, begun after the pause, finds messages,
		// and they run.
		if err := c.SetQueuePaused(ctx, "pq", true); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the worker's client to know the queue paused", func() bool { return baton.QueuePausedHere(wc, "pq") })
		baton.LoseWakeUps(wc, true)
		base := count()
		enqueue(t, c, "pq", "after")
		if err := c.SetQueuePaused(ctx, "pq", false); err != nil {
			t.Fatal(err)
		}
		close(release) // not blocked: the first message of the round runs at once
		waitFor(t, "the message to run after a resumption the worker missed", func() bool { return count() == base+1 })
		baton.LoseWakeUps(wc, false)
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
