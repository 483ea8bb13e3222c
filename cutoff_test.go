package baton_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestLockCallCutOff (every backend; on SQLite the statements run in the
// process and the call's deadline interrupts them): a lock call whose
// deadline passes while its statement waits in the server (here for the
// lock tables, which another connection locks) either returns the lock or
// leaves nothing behind, also once the server has run the statement: a
// holder or request written after the call gave up would be a lock that
// nobody knows it holds, or a wait that nobody waits for. Once with the
// lock free (the uncontended path), once held by another session (the
// request that waits).
func TestLockCallCutOff(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		rows := func(s *baton.Session) int { t.Helper(); return lockRows(t, b, db, s) }
		// block locks the tables every lock call writes, on a connection
		// of the test's own, until the returned func lets them go.
		block := func() func() {
			t.Helper()
			conn, err := db.Conn(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			stmts := []string{"BEGIN", "LOCK TABLE baton_lock_idents IN SHARE ROW EXCLUSIVE MODE"}
			unlock := "COMMIT"
			switch b.Name {
			case "sqlite": // the database's write lock
				stmts = []string{"BEGIN IMMEDIATE"}
			case "mysql":
				stmts = []string{"LOCK TABLES baton_lock_fast WRITE, baton_lock_idents WRITE, baton_lock_requests WRITE"}
				unlock = "UNLOCK TABLES"
			}
			for _, q := range stmts {
				if _, err := conn.ExecContext(ctxT(t), q); err != nil {
					t.Fatal(err)
				}
			}
			return func() {
				t.Helper()
				if _, err := conn.ExecContext(ctxT(t), unlock); err != nil {
					t.Fatal(err)
				}
				conn.Close()
			}
		}
		holder, caller := session(t, c), session(t, c)
		for _, contended := range []bool{false, true} {
			if contended {
				mustLock(t, holder, "co", baton.Write, "x")
			}
			unblock := block()
			ch := make(chan error, 1)
			go func() {
				_, err := caller.Lock(context.Background(), "co", baton.Write, 100*time.Millisecond, "x")
				ch <- err
			}()
			time.Sleep(400 * time.Millisecond) // past the call's deadline
			unblock()
			err := recv(t, ch)
			// Time for a statement the client gave up on to end in the
			// server.
			time.Sleep(200 * time.Millisecond)
			switch n := rows(caller); {
			case err == nil && contended:
				t.Fatal("the call was granted a lock another session holds")
			case err == nil && n != 1:
				t.Fatalf("the call returned the lock, and the session has %d instances in the lock state", n)
			case err != nil && n != 0:
				t.Fatalf("the call failed (%v), and the session has %d instances in the lock state", err, n)
			case err != nil:
				wantErr(t, err, baton.ErrTimeout)
			}
			for _, s := range []*baton.Session{holder, caller} {
				if _, err := s.Release(ctxT(t), "co"); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("contended %v: %v", contended, err)
		}
	})
}
