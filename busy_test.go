package baton_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestFastPathBehindOtherWriter: on SQLite, the uncontended lock
// statements run on a connection with no busy timeout and without the
// call's context (driver/sqlite's quickly). When another connection holds
// the file's write lock they must still wait for it as long as the call
// lets them, and no longer:
//   - a Lock whose context ends while the write lock is held returns the
//     context's error (not a grant once the write lock is let go, nor
//     SQLite's "database is locked");
//   - a Lock and a Release started while the write lock is held for a
//     second (longer than the engine's retries of a busy statement last)
//     succeed once it is let go.
//
// The server backends have no file lock; this is SQLite's only.
func TestFastPathBehindOtherWriter(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name != "sqlite" {
			t.Skip("SQLite's file write lock only")
		}
		dsn := b.NewDSN(t)
		// A long lease: the renewals wait for the same write lock.
		c := openDSN(t, dsn, baton.Options{Lease: 20 * time.Second})
		s := session(t, c)
		mustLock(t, s, "busy", baton.Write, "warm") // the hot connection is open
		if _, err := s.Release(ctxT(t), "busy"); err != nil {
			t.Fatal(err)
		}
		raw := batontest.SQLDB(t, dsn)
		hold := func() (letGo func()) {
			t.Helper()
			tx, err := raw.BeginTx(ctxT(t), nil) // BEGIN IMMEDIATE: the write lock
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := tx.Rollback(); err != nil {
					t.Error(err)
				}
			}
		}

		// The write lock is let go 2 s after the call began: the call's
		// own statement gives up at its context's end (1 s), having
		// written nothing, so the call returns the context's error then,
		// before the write lock is let go (the withdrawal of a call that
		// stored nothing needs no write transaction; it used to wait for
		// the other writer). A statement that ignored the context would
		// take the lock at 2 s; one that gave up on SQLITE_BUSY would
		// fail with it well before 1 s, once the engine's retries ran out.
		letGo := hold()
		var let atomic.Bool
		go func() { time.Sleep(2 * time.Second); let.Store(true); letGo() }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.Lock(ctx, "busy", baton.Write, 0, "x")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock behind another connection's write lock, its context ended: %v; want %v", err, context.DeadlineExceeded)
		}
		if let.Load() {
			t.Fatal("the call whose context ended returned only once the other connection let its write lock go")
		}
		for !let.Load() {
			time.Sleep(10 * time.Millisecond)
		}

		letGo = hold()
		go func() { time.Sleep(time.Second); letGo() }()
		if _, err := s.Lock(ctxT(t), "busy", baton.Write, 0, "x"); err != nil {
			t.Fatalf("Lock behind another connection's write lock held for 1 s: %v", err)
		}
		letGo = hold()
		go func() { time.Sleep(time.Second); letGo() }()
		if n, err := s.Release(ctxT(t), "busy"); err != nil || n != 1 {
			t.Fatalf("Release behind another connection's write lock held for 1 s: released %d, %v; want 1", n, err)
		}
	})
}

// TestRefusedTryBesideOtherWriter: a lock tried once that another session
// holds is refused by a read, which another connection's write lock on
// the file does not hold back: the try returns while that lock is held
// (it used to wait for it, to store and withdraw a request).
func TestRefusedTryBesideOtherWriter(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name != "sqlite" {
			t.Skip("SQLite's file write lock only")
		}
		dsn := b.NewDSN(t)
		opts := baton.Options{Lease: 20 * time.Second} // renewals wait for the write lock too
		holder := session(t, openDSN(t, dsn, opts))
		trier := session(t, openDSN(t, dsn, opts))
		mustLock(t, holder, "busy", baton.Write, "x")
		// The first try learns that the name is contended.
		if _, err := trier.Lock(ctxT(t), "busy", baton.Write, 0, "x"); !errors.Is(err, baton.ErrTimeout) {
			t.Fatalf("a try on a held lock: %v, want ErrTimeout", err)
		}
		tx, err := batontest.SQLDB(t, dsn).BeginTx(ctxT(t), nil) // BEGIN IMMEDIATE: the write lock
		if err != nil {
			t.Fatal(err)
		}
		var let atomic.Bool
		go func() {
			time.Sleep(2 * time.Second)
			let.Store(true)
			_ = tx.Rollback()
		}()
		for _, mode := range []baton.Mode{baton.Write, baton.Read} {
			if _, err := trier.Lock(ctxT(t), "busy", mode, 0, "x"); !errors.Is(err, baton.ErrTimeout) {
				t.Fatalf("a %v try on a held lock beside another writer: %v, want ErrTimeout", mode, err)
			}
		}
		if let.Load() {
			t.Fatal("the refused tries returned only once the other connection let its write lock go")
		}
	})
}

// TestTryOfSeveralNamesOneHeld: a try of several names, one of which
// another session holds, is refused and takes nothing, the first time
// (name by name) and after it (the held name, known contended, is read
// first); a read try of the same names beside a reader of that name is
// granted, and so is the write try once the holder lets go.
func TestTryOfSeveralNamesOneHeld(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		holderC, dsn := open(t, b)
		holder, trier := session(t, holderC), session(t, openDSN(t, dsn))
		mustLock(t, holder, "several", baton.Write, "b")
		for i := range 3 {
			mustRefuse(t, trier, "several", baton.Write, "a", "b", "c")
			if n := len(held(t, holderC, trier)); n != 0 {
				t.Fatalf("try %d: the refused try left %d instances", i+1, n)
			}
		}
		release(t, holder, "several")
		mustLock(t, holder, "several", baton.Read, "b")
		if g := mustLock(t, trier, "several", baton.Read, "a", "b", "c"); len(g) != 3 {
			t.Fatalf("a read try beside a reader: %d grants, want 3", len(g))
		}
		release(t, trier, "several")
		mustRefuse(t, trier, "several", baton.Write, "a", "b")
		release(t, holder, "several")
		if g := mustLock(t, trier, "several", baton.Write, "a", "b", "c"); len(g) != 3 {
			t.Fatalf("the write try once the holder let go: %d grants, want 3", len(g))
		}
	})
}

// TestTryOwnLockAfterContention: a session never conflicts with itself,
// also where its client has found the name contended (another of its
// sessions was refused it), so that a try reads first whether the lock is
// held against it: the holder's tries of the name, alone, with another
// name, and in read mode, are granted as new instances.
func TestTryOwnLockAfterContention(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, owner, other := twoSessions(t, b)
		mustLock(t, owner, "own", baton.Write, "x")
		mustRefuse(t, other, "own", baton.Write, "x")
		mustLock(t, owner, "own", baton.Write, "x")
		mustRefuse(t, other, "own", baton.Write, "x", "y")
		mustLock(t, owner, "own", baton.Write, "x", "y")
		mustLock(t, owner, "own", baton.Read, "x")
		if n, err := owner.Release(ctxT(t), "own"); err != nil || n != 5 {
			t.Fatalf("release: %d instances, %v; want 5 (x three times in write mode and once in read mode, y once)", n, err)
		}
	})
}
