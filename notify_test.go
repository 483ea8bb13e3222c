package baton_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

func listen(t *testing.T, c *baton.Client, channels ...string) *baton.Listener {
	t.Helper()
	l, err := c.Listen(ctxT(t), channels...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func next(t *testing.T, l *baton.Listener) baton.Notification {
	t.Helper()
	select {
	case n := <-l.C():
		return n
	case <-time.After(15 * time.Second):
		t.Fatal("no notification arrived")
		return baton.Notification{}
	}
}

func none(t *testing.T, l *baton.Listener, wait time.Duration) {
	t.Helper()
	select {
	case n := <-l.C():
		t.Fatalf("unexpected notification %+v", n)
	case <-time.After(wait):
	}
}

func TestNotifyReachesEveryListener(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c1, dsn := open(t, b)
		c2 := openDSN(t, dsn) // as another process would
		l1 := listen(t, c1, "jobs")
		l2 := listen(t, c2, "jobs", "other")
		l3 := listen(t, c2, "other")
		if err := c1.Notify(ctxT(t), "jobs", "hello wörld"); err != nil {
			t.Fatal(err)
		}
		for _, l := range []*baton.Listener{l1, l2} {
			if n := next(t, l); n.Channel != "jobs" || n.Payload != "hello wörld" {
				t.Fatalf("got %+v", n)
			}
		}
		none(t, l3, 300*time.Millisecond)
		// Order from one sender is kept; the empty payload is allowed.
		for i := 0; i < 30; i++ {
			if err := c2.Notify(ctxT(t), "other", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c2.Notify(ctxT(t), "other", ""); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if n := next(t, l3); n.Payload != fmt.Sprint(i) {
				t.Fatalf("notification %d: got %q", i, n.Payload)
			}
		}
		if n := next(t, l3); n.Payload != "" {
			t.Fatalf("empty payload came as %q", n.Payload)
		}
		// A closed listener gets nothing more, and its channel is closed.
		l3.Close()
		if _, ok := <-l3.C(); ok {
			t.Fatal("closed listener still delivers")
		}
	})
}

// TestNotifyInstallationsApart: two installations (on PostgreSQL, two
// schemas of one database, the same table prefix) do not hear each
// other's notifications: PostgreSQL's channels are the database's, so
// baton's carry the schema.
func TestNotifyInstallationsApart(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c1, _ := open(t, b)
		c2, _ := open(t, b)
		l1 := listen(t, c1, "jobs")
		if err := c2.Notify(ctxT(t), "jobs", "the other installation"); err != nil {
			t.Fatal(err)
		}
		if err := c1.Notify(ctxT(t), "jobs", "mine"); err != nil {
			t.Fatal(err)
		}
		if n := next(t, l1); n.Payload != "mine" {
			t.Fatalf("got %+v, want only this installation's notification", n)
		}
		none(t, l1, 200*time.Millisecond)
	})
}

func TestNotifyTxCommitAndRollback(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		l := listen(t, c, "orders")
		tx := begin(t, db)
		if err := c.NotifyTx(ctx, tx, "orders", "rolled back"); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, false)
		tx = begin(t, db)
		if err := c.NotifyTx(ctx, tx, "orders", "committed"); err != nil {
			t.Fatal(err)
		}
		none(t, l, 200*time.Millisecond) // not before commit
		endTx(t, tx, true)
		if n := next(t, l); n.Payload != "committed" {
			t.Fatalf("got %+v (a rolled-back notification was delivered?)", n)
		}
		none(t, l, 300*time.Millisecond)
	})
}

// TestNotifyLateCommit: a notification whose transaction started first but
// commits after a later one is still delivered (ids are allocated before
// commit on PostgreSQL and MySQL).
func TestNotifyLateCommit(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer at a time: transactions cannot interleave")
		}
		c, db, ctx := openQDB(t, b)
		l := listen(t, c, "late")
		early := begin(t, db)
		if err := c.NotifyTx(ctx, early, "late", "first begun"); err != nil {
			t.Fatal(err)
		}
		if err := c.Notify(ctx, "late", "first committed"); err != nil {
			t.Fatal(err)
		}
		if n := next(t, l); n.Payload != "first committed" {
			t.Fatalf("got %+v", n)
		}
		endTx(t, early, true)
		if n := next(t, l); n.Payload != "first begun" {
			t.Fatalf("late commit: got %+v", n)
		}
	})
}

func TestNotifyBadInput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		ctx := ctxT(t)
		for _, ch := range []string{"", "has space", strings.Repeat("c", 65), "ünï"} {
			wantErr(t, c.Notify(ctx, ch, "x"), baton.ErrInvalid)
			_, err := c.Listen(ctx, ch)
			wantErr(t, err, baton.ErrInvalid)
		}
		wantErr(t, c.Notify(ctx, "ok", strings.Repeat("p", baton.MaxPayload+1)), baton.ErrInvalid)
		wantErr(t, c.Notify(ctx, "ok", "\xff"), baton.ErrInvalid)
		if err := c.Notify(ctx, "ok", strings.Repeat("p", baton.MaxPayload)); err != nil {
			t.Fatalf("payload of exactly MaxPayload: %v", err)
		}
		_, err := c.Listen(ctx)
		wantErr(t, err, baton.ErrInvalid)
	})
}

// TestNotifyOrderAfterLateCommit: a sender's notifications arrive in the
// order they committed even when the first of them committed late, after a
// later id of another sender was read: both are read in one go, and the
// late one must come first.
func TestNotifyOrderAfterLateCommit(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer at a time: transactions cannot interleave")
		}
		notifyOrderAfterLateCommit(t, b.NewDSN(t), "")
	})
}

// notifyOrderAfterLateCommit runs TestNotifyOrderAfterLateCommit with a
// listener on dsn and senders on senderDSN (dsn when "").
func notifyOrderAfterLateCommit(t *testing.T, dsn, senderDSN string) {
	if senderDSN == "" {
		senderDSN = dsn
	}
	// A long interval: both commits below land between two reads.
	c := openDSN(t, dsn, baton.Options{PollInterval: 2 * time.Second})
	other := openDSN(t, senderDSN)
	db := batontest.SQLDB(t, senderDSN)
	l := listen(t, c, "order")
	ctx := ctxT(t)
	notifyTx := func(tx *sql.Tx, payload string) {
		t.Helper()
		if err := other.NotifyTx(ctx, tx, "order", payload); err != nil {
			t.Fatal(err)
		}
	}
	first := begin(t, db)
	notifyTx(first, "a1")
	if err := other.Notify(ctx, "order", "b1"); err != nil {
		t.Fatal(err)
	}
	if n := next(t, l); n.Payload != "b1" {
		t.Fatalf("got %+v", n)
	}
	endTx(t, first, true)
	second := begin(t, db)
	notifyTx(second, "a2")
	endTx(t, second, true)
	for _, want := range []string{"a1", "a2"} {
		if n := next(t, l); n.Payload != want {
			t.Fatalf("got %q, want %q: one sender's notifications out of commit order", n.Payload, want)
		}
	}
}
