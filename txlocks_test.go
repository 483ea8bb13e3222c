package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// openQDB is openQ with the program's own pool on the client's database
// (plain database/sql) and the test's context.
func openQDB(t *testing.T, b batontest.Backend) (*baton.Client, *sql.DB, context.Context) {
	t.Helper()
	c, dsn := openQ(t, b)
	return c, batontest.SQLDB(t, dsn), ctxT(t)
}

// openTxDB opens a client on a fresh database of the backend and returns
// it with the program's own pool on that database and the test's context.
// On SQLite the pool's transactions begin deferred (BEGIN), as
// database/sql's do by default, and without a busy timeout, so that
// LockTx's timeout is the only wait.
func openTxDB(t *testing.T, b batontest.Backend) (*baton.Client, *sql.DB, context.Context) {
	t.Helper()
	c, dsn := open(t, b)
	if b.Label != "sqlite" {
		return c, batontest.SQLDB(t, dsn), ctxT(t)
	}
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return c, db, ctxT(t)
}

func begin(t *testing.T, db *sql.DB) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

// endTx commits tx, or rolls it back when commit is false.
func endTx(t *testing.T, tx *sql.Tx, commit bool) {
	t.Helper()
	end := tx.Rollback
	if commit {
		end = tx.Commit
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
}

// lockAsync runs f in the background; the channel gets its error.
func lockAsync(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// stillWaiting fails the test if ch has an answer within d.
func stillWaiting(t *testing.T, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: got %v while the lock was held", what, err)
	case <-time.After(d):
	}
}

func answer(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	return await(t, ch, 20*time.Second, what+": no answer once the lock was free")
}

// TestLockTxSessions: a transaction's lock and sessions' locks exclude
// each other both ways, in both orders, and the transaction's end (commit
// or rollback) is what releases it.
func TestLockTxSessions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openTxDB(t, b)
		s := session(t, c)

		// Transaction first: a session waits until it commits.
		tx := begin(t, db)
		if err := c.LockTx(ctx, tx, "ns", baton.Write, 0, "a"); err != nil {
			t.Fatal(err)
		}
		got := lockAsync(func() error { _, err := s.Lock(ctx, "ns", baton.Read, 15*time.Second, "a"); return err })
		stillWaiting(t, got, 300*time.Millisecond, "session lock under a transaction's write lock")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := answer(t, got, "session lock after commit"); err != nil {
			t.Fatalf("session lock after the transaction committed: %v", err)
		}

		// Session first: the transaction fails at once with timeout 0,
		// waits with a timeout, and gets the lock once it is released.
		tx = begin(t, db)
		wantErr(t, c.LockTx(ctx, tx, "ns", baton.Write, 0, "a"), baton.ErrTimeout)
		if b.Label == "sqlite" {
			// The transaction holds the write lock now; the session
			// could not release: no waiting.
			wantErr(t, c.LockTx(ctx, tx, "ns", baton.Write, time.Second, "a"), baton.ErrDeadlock)
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Release(ctx, "ns"); err != nil {
				t.Fatal(err)
			}
			tx = begin(t, db)
			if err := c.LockTx(ctx, tx, "ns", baton.Write, 0, "a"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			mustLock(t, s, "ns", baton.Read, "r")
			tx = begin(t, db)
			if err := c.LockTx(ctx, tx, "ns", baton.Read, 0, "r"); err != nil {
				t.Fatalf("read lock in a transaction beside a session's read lock: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			return
		}
		wantErr(t, c.LockTx(ctx, tx, "ns", baton.Write, 150*time.Millisecond, "a"), baton.ErrTimeout)
		got = lockAsync(func() error { return c.LockTx(ctx, tx, "ns", baton.Write, 15*time.Second, "a") })
		stillWaiting(t, got, 300*time.Millisecond, "transaction lock under a session's read lock")
		if n, err := s.Release(ctx, "ns"); err != nil || n != 1 {
			t.Fatalf("release: %d %v", n, err)
		}
		if err := answer(t, got, "transaction lock after release"); err != nil {
			t.Fatalf("transaction lock after the session released: %v", err)
		}
		// A rollback releases it too.
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		mustLock(t, s, "ns", baton.Write, "a")
		if _, err := s.Release(ctx, "ns"); err != nil {
			t.Fatal(err)
		}

		// Readers share: a session's and a transaction's.
		mustLock(t, s, "ns", baton.Read, "r")
		tx = begin(t, db)
		if err := c.LockTx(ctx, tx, "ns", baton.Read, 0, "r"); err != nil {
			t.Fatalf("read lock in a transaction beside a session's read lock: %v", err)
		}
		// The other way round: a session's read lock beside the
		// transaction's, not a write lock.
		if _, err := s.Lock(ctx, "ns", baton.Read, 0, "r2"); err != nil {
			t.Fatal(err)
		}
		if err := c.LockTx(ctx, tx, "ns", baton.Read, 0, "r3"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lock(ctx, "ns", baton.Read, 0, "r3"); err != nil {
			t.Fatalf("session's read lock beside a transaction's read lock: %v", err)
		}
		_, err := session(t, c).Lock(ctx, "ns", baton.Write, 0, "r3")
		wantErr(t, err, baton.ErrTimeout)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockTxTransactions: two transactions' write locks on one name
// exclude each other, read locks share (except on SQLite, where a
// transaction's lock is the write lock); a failed call takes nothing and
// leaves the transaction usable.
func TestLockTxTransactions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openTxDB(t, b)
		if _, err := db.ExecContext(ctx, "CREATE TABLE txl_marks (v INTEGER)"); err != nil {
			t.Fatal(err)
		}
		t1, t2 := begin(t, db), begin(t, db)
		if err := c.LockTx(ctx, t1, "ns", baton.Write, 0, "w", "x"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, c.LockTx(ctx, t2, "ns", baton.Write, 0, "x"), baton.ErrTimeout)
		wantErr(t, c.LockTx(ctx, t2, "ns", baton.Read, 200*time.Millisecond, "x"), baton.ErrTimeout)
		if b.Label != "sqlite" {
			// The failed calls left t2 usable and holding nothing.
			if _, err := t2.ExecContext(ctx, "INSERT INTO txl_marks (v) VALUES (2)"); err != nil {
				t.Fatalf("the transaction after a failed LockTx: %v", err)
			}
			if err := c.LockTx(ctx, t2, "ns", baton.Write, 0, "y"); err != nil {
				t.Fatalf("another name in the same transaction: %v", err)
			}
		}
		got := lockAsync(func() error { return c.LockTx(ctx, t2, "ns", baton.Write, 15*time.Second, "w") })
		stillWaiting(t, got, 300*time.Millisecond, "a transaction's lock under another's")
		if _, err := t1.ExecContext(ctx, "INSERT INTO txl_marks (v) VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if err := t1.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := answer(t, got, "the second transaction"); err != nil {
			t.Fatalf("the second transaction after the first committed: %v", err)
		}
		if err := t2.Commit(); err != nil {
			t.Fatal(err)
		}
		if b.Label == "sqlite" {
			return
		}
		r1, r2 := begin(t, db), begin(t, db)
		for _, tx := range []*sql.Tx{r1, r2} {
			if err := c.LockTx(ctx, tx, "ns", baton.Read, 0, "shared"); err != nil {
				t.Fatalf("two transactions' read locks: %v", err)
			}
		}
	})
}

// TestLockTxMonitoring: Locks lists a transaction's lock while the
// transaction runs (not on SQLite, where no other connection can see
// inside a write transaction), and no longer once it ended.
func TestLockTxMonitoring(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openTxDB(t, b)
		tx := begin(t, db)
		if err := c.LockTx(ctx, tx, "mon", baton.Write, 0, "m"); err != nil {
			t.Fatal(err)
		}
		txLocks := func() []baton.LockInfo {
			all, err := c.Locks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var out []baton.LockInfo
			for _, l := range all {
				if l.Transaction {
					out = append(out, l)
				}
			}
			return out
		}
		ls := txLocks()
		if b.Label == "sqlite" {
			if len(ls) != 0 {
				t.Fatalf("SQLite listed a transaction's lock: %+v", ls)
			}
		} else if len(ls) != 1 || ls[0].Name != "m" || ls[0].Namespace != "mon" || ls[0].Mode != "EXCLUSIVE" ||
			ls[0].Status != "GRANTED" || !strings.HasPrefix(ls[0].Session, "tx ") {
			t.Fatalf("Locks while the transaction runs: %+v", ls)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if ls := txLocks(); len(ls) != 0 {
			t.Fatalf("Locks after the transaction committed: %+v", ls)
		}
	})
}

// TestLockTxExclusion: sessions and transactions taking one write lock in
// turn, at random, never overlap: every holder checks that it is alone.
func TestLockTxExclusion(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, _ := openTxDB(t, b)
		var inside, overlaps, done atomic.Int64
		critical := func() {
			if inside.Add(1) != 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			done.Add(1)
		}
		const workers, rounds = 4, 15
		batontest.Concurrently(t, workers, func(w int) error {
			ctx := ctxT(t)
			s, err := c.NewSession(ctx)
			if err != nil {
				return err
			}
			defer s.Close(context.Background())
			for i := range rounds {
				if (w+i)%2 == 0 {
					if _, err := s.Lock(ctx, "ex", baton.Write, 20*time.Second, "one"); err != nil {
						return fmt.Errorf("session: %w", err)
					}
					critical()
					if _, err := s.Release(ctx, "ex"); err != nil {
						return err
					}
					continue
				}
				tx, err := lockInTx(ctx, c, db, b.Label == "sqlite")
				if err != nil {
					return fmt.Errorf("transaction: %w", err)
				}
				critical()
				if i%4 == 1 {
					err = tx.Rollback()
				} else {
					err = tx.Commit()
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if overlaps.Load() != 0 || done.Load() != workers*rounds {
			t.Fatalf("%d overlaps in %d critical sections (want 0 in %d)", overlaps.Load(), done.Load(), workers*rounds)
		}
	})
}

// lockInTx begins a transaction and takes the write lock ex/one in it.
// On SQLite a session's lock fails the call at once (ErrDeadlock: the
// session could not release it while the transaction holds the write
// lock), and the program rolls back and tries again, as it must.
func lockInTx(ctx context.Context, c *baton.Client, db *sql.DB, sqlite bool) (*sql.Tx, error) {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		err = c.LockTx(ctx, tx, "ex", baton.Write, 20*time.Second, "one")
		if err == nil {
			return tx, nil
		}
		_ = tx.Rollback()
		if !sqlite || !errors.Is(err, baton.ErrDeadlock) {
			return nil, err
		}
		// Not at once: each try takes the write lock, which the session
		// needs to release.
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLockTxBadInput: bad names and modes fail before anything is taken.
func TestLockTxBadInput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openTxDB(t, b)
		tx := begin(t, db)
		wantErr(t, c.LockTx(ctx, tx, "", baton.Write, 0, "a"), baton.ErrWrongName)
		wantErr(t, c.LockTx(ctx, tx, "ns", baton.Write, 0), baton.ErrWrongName)
		wantErr(t, c.LockTx(ctx, tx, "ns", baton.Write, 0, strings.Repeat("n", 65)), baton.ErrWrongName)
		if err := c.LockTx(ctx, tx, "ns", baton.Mode(7), 0, "a"); err == nil {
			t.Fatal("an unknown mode was accepted")
		}
		// A pool is no transaction: the lock would end with the call.
		wantErr(t, c.LockTx(ctx, db, "ns", baton.Write, 0, "a"), baton.ErrInvalid)
	})
}

// TestLockTxPgx: a lock in a pgx transaction (postgres.PgxTx).
func TestLockTxPgx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn, pool := pgxPool(t, b, "pgx transactions are PostgreSQL's")
		c := openDSN(t, dsn)
		ctx := ctxT(t)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if err := c.LockTx(ctx, postgres.PgxTx{Tx: tx}, "pgx", baton.Write, 0, "p"); err != nil {
			t.Fatal(err)
		}
		s := session(t, c)
		_, err = s.Lock(ctx, "pgx", baton.Write, 0, "p")
		wantErr(t, err, baton.ErrTimeout)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		mustLock(t, s, "pgx", baton.Write, "p")
	})
}

// childTxHold takes crash/tx in a transaction of its own pool and waits
// to be killed.
func childTxHold(dsn string) {
	ctx := context.Background()
	c, err := baton.Open(ctx, dsn)
	childMust(err)
	db, err := batontest.OpenSQL(dsn)
	childMust(err)
	tx, err := db.BeginTx(ctx, nil)
	childMust(err)
	childMust(c.LockTx(ctx, tx, "crash", baton.Write, 0, "tx"))
	childReady("locked")
}

// TestLockTxKilledHolder: a process killed with SIGKILL inside a
// transaction holding a lock: the database ends the transaction, and a
// session waiting for the lock gets it; never while the holder lives.
func TestLockTxKilledHolder(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := open(t, b)
		// Before the child: on SQLite its transaction holds the write lock.
		s := session(t, c)
		child := startChildSaying(t, "locked", "txhold", dsn)
		ctx := ctxT(t)
		got := lockAsync(func() error { _, err := s.Lock(ctx, "crash", baton.Write, 25*time.Second, "tx"); return err })
		stillWaiting(t, got, 500*time.Millisecond, "session lock while the transaction's holder lives")
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		if err := answer(t, got, "session lock after the holder was killed"); err != nil {
			t.Fatalf("session lock after the transaction's holder was killed: %v", err)
		}
	})
}

// TestLockTxDeadlineKeepsTransaction (MySQL/MariaDB, whose LockTx writes
// a hold row in the caller's transaction): LockTx's timeout passes while
// that statement waits (here for the table, which another connection
// locks); the statement is not cut off, which would close the caller's
// connection and end its transaction: the call answers once the table is
// free, and the transaction goes on and commits.
func TestLockTxDeadlineKeepsTransaction(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name != "mysql" {
			t.Skip("only MySQL/MariaDB's LockTx writes in the caller's transaction after its gate")
		}
		c, db, ctx := openTxDB(t, b)
		// The gate row exists before the table is locked.
		warm := begin(t, db)
		if err := c.LockTx(ctx, warm, "ns", baton.Write, 0, "a"); err != nil {
			t.Fatal(err)
		}
		endTx(t, warm, true)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "LOCK TABLES baton_lock_txholds WRITE"); err != nil {
			t.Fatal(err)
		}
		tx := begin(t, db)
		got := lockAsync(func() error { return c.LockTx(ctx, tx, "ns", baton.Write, 100*time.Millisecond, "a") })
		time.Sleep(400 * time.Millisecond) // past the call's timeout
		if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
			t.Fatal(err)
		}
		err = answer(t, got, "LockTx whose hold row waited past its timeout")
		var one int
		if qerr := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); qerr != nil {
			t.Fatalf("the transaction is unusable after LockTx answered %v: %v", err, qerr)
		}
		if err == nil {
			// Granted late: the transaction holds the lock.
			_, serr := session(t, c).Lock(ctx, "ns", baton.Write, 0, "a")
			wantErr(t, serr, baton.ErrTimeout)
		}
		endTx(t, tx, true)
	})
}

// TestAppTransactionsReleaseNothing: a session's locks are not tied to any
// transaction (DESIGN, Locks): the program's transactions that commit or
// roll back, with baton's statements in them (an enqueue, a notification,
// a transaction-scoped lock on another name) or without, leave the
// session's locks held, and another session still cannot take them.
func TestAppTransactionsReleaseNothing(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openTxDB(t, b)
		s, other := session(t, c), session(t, c)
		mustLock(t, s, "app", baton.Write, "w")
		mustLock(t, s, "app", baton.Read, "r")
		for _, commit := range []bool{true, false} {
			tx := begin(t, db)
			if _, err := c.EnqueueTx(ctx, tx, "appq", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := c.NotifyTx(ctx, tx, "appch", "x"); err != nil {
				t.Fatal(err)
			}
			if err := c.LockTx(ctx, tx, "app", baton.Write, 0, "tx"); err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, commit)
			if got := len(held(t, c, s)); got != 2 {
				t.Fatalf("after the program's transaction (commit %v) the session holds %d locks, want 2", commit, got)
			}
			_, err := other.Lock(ctx, "app", baton.Write, 0, "w")
			wantErr(t, err, baton.ErrTimeout)
			_, err = other.Lock(ctx, "app", baton.Write, 0, "r")
			wantErr(t, err, baton.ErrTimeout)
		}
	})
}
