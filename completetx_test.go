package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// effectInsert is the handler's own write, in the dialect of the DSN.
func effectInsert(dsn string) string {
	if strings.HasPrefix(dsn, "postgres") {
		return "INSERT INTO effects (msg_id) VALUES ($1)"
	}
	return "INSERT INTO effects (msg_id) VALUES (?)"
}

// childCompleteTx works the queue "effects", each handler writing its
// effect and completing its message in one transaction, with pauses at
// random points, until it is killed.
func childCompleteTx(dsn string) {
	ctx := context.Background()
	c, err := baton.Open(ctx, dsn, baton.Options{Lease: time.Second})
	childMust(err)
	db, err := batontest.OpenSQL(dsn)
	childMust(err)
	pause := func() { time.Sleep(time.Duration(rand.Intn(3000)) * time.Microsecond) }
	fmt.Println("ready")
	_ = c.Work(ctx, "effects", func(ctx context.Context, m *baton.Message) error {
		return inTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, effectInsert(dsn), m.ID); err != nil {
				return err
			}
			pause()
			if err := c.CompleteTx(ctx, tx, m); err != nil {
				return err
			}
			pause()
			return nil
		})
	}, baton.WorkerOptions{Concurrency: 4, Visibility: 2 * time.Second})
}

func inTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// TestCompleteTxExactlyOnce: handlers write a row and complete their
// message in the same transaction while their processes are killed
// (kill -9) at random points, again and again; in the end every message is
// completed and every effect happened exactly once.
func TestCompleteTxExactlyOnce(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db := batontest.SQLDB(t, dsn)
		mustExec(t, db, "CREATE TABLE effects (msg_id bigint NOT NULL)")
		const n = 300
		enqueueMany(t, c, "effects", n, func(int) baton.NewMessage { return baton.NewMessage{Payload: []byte("e")} })
		completed := func() int {
			ms, _, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "effects", State: baton.StateCompleted, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return len(ms)
		}
		for round := 0; round < 6 && completed() < n; round++ {
			child := startChildSaying(t, "ready", "completetx", dsn)
			time.Sleep(time.Duration(20+rand.Intn(150)) * time.Millisecond) // then a kill at a random point
			_ = child.Process.Kill()
			_ = child.Wait()
		}
		// What the killed workers held comes back after their leases; a
		// last worker finishes the queue.
		ctx, stop := context.WithCancel(ctxT(t))
		defer stop()
		done := make(chan error, 1)
		go func() {
			done <- c.Work(ctx, "effects", func(ctx context.Context, m *baton.Message) error {
				return inTx(ctx, db, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, effectInsert(dsn), m.ID); err != nil {
						return err
					}
					return c.CompleteTx(ctx, tx, m)
				})
			}, baton.WorkerOptions{Concurrency: 4})
		}()
		waitFor(t, "every message completed", func() bool { return completed() == n })
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var rows, distinct int
		if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT msg_id) FROM effects").Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		if rows != n || distinct != n {
			t.Fatalf("%d effects for %d messages (%d distinct), want exactly one each", rows, n, distinct)
		}
	})
}

// TestCompleteTxRolledBack: a handler completes its message in its own
// transaction, which then rolls back (the handler fails after CompleteTx):
// the completion goes with the transaction, the message runs again, and
// its second run, committed, completes it, with the effect of that run
// only.
func TestCompleteTxRolledBack(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db := batontest.SQLDB(t, dsn)
		mustExec(t, db, "CREATE TABLE effects (msg_id bigint NOT NULL)")
		id := enqueue(t, c, "rollback", "r")
		ctx, stop := context.WithCancel(ctxT(t))
		defer stop()
		runs := make(chan int64, 10)
		done := make(chan error, 1)
		go func() {
			done <- c.Work(ctx, "rollback", func(ctx context.Context, m *baton.Message) error {
				runs <- m.ID
				first := len(runs) == 1 && m.ID == id
				return inTx(ctx, db, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, effectInsert(dsn), m.ID); err != nil {
						return err
					}
					if err := c.CompleteTx(ctx, tx, m); err != nil {
						return err
					}
					if first {
						return errors.New("the handler fails after CompleteTx: its transaction rolls back")
					}
					return nil
				})
			}, baton.WorkerOptions{Concurrency: 1})
		}()
		waitFor(t, "the message completed", func() bool {
			m, err := c.Message(ctxT(t), id)
			if err != nil {
				t.Fatal(err)
			}
			return m.State == baton.StateCompleted
		})
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := len(runs); n != 2 {
			t.Fatalf("the message ran %d times, want 2 (the rolled-back completion, then the committed one)", n)
		}
		var rows int
		if err := db.QueryRow("SELECT COUNT(*) FROM effects").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 1 {
			t.Fatalf("%d effects, want the second run's only", rows)
		}
	})
}
