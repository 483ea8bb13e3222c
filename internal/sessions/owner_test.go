package sessions_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	_ "github.com/batonhq/baton/driver/sqlite" // the sqlite: scheme
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/sessions"
)

// TestOwnerEndsSessions: closing a session releases what it holds, then
// deletes its row in one transaction that drops its locks and returns its
// claims, and wakes their queues; a second close does nothing. A dead
// session's requests are withdrawn before the delete.
func TestOwnerEndsSessions(t *testing.T) {
	ctx := context.Background()
	d := batontest.Migrated(t, batontest.SQLiteDSN(t))
	var st batontest.Steps // what the Owner asks of what sessions hold
	var dropErr error
	o := sessions.NewOwner(sessions.OwnerConfig{Driver: d,
		Release:  func(_ context.Context, s *sessions.Session) { st.Add("release " + s.ID()) },
		Withdraw: func(_ context.Context, id string) { st.Add("withdraw " + id) },
		DropLocks: func(_ context.Context, _ driver.Tx, id string) error {
			st.Add("drop locks " + id)
			return dropErr
		},
		ReturnClaims: func(_ context.Context, _ driver.Tx, id string) (func(), error) {
			st.Add("return claims " + id)
			return func() { st.Add("wake q") }, nil
		}})
	k := sessions.NewKeeper(sessions.Config{Driver: d, ClientID: "client", Lease: 10 * time.Second, Heartbeat: 3 * time.Second,
		EndSession: o.EndDead, SessionLost: func() {}, Log: func(string, error) {}})
	live := func(id string) bool {
		ids, err := d.NoTx().SessionListByClient(ctx, "client")
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, id)
	}

	s, err := k.Begin(ctx, "s1", "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := []string{"release s1", "drop locks s1", "return claims s1", "wake q"}
	if got := st.Take(); !slices.Equal(got, want) {
		t.Fatalf("close: %q, want %q", got, want)
	}
	if live("s1") || !errors.Is(s.Err(), errs.ErrClosed) {
		t.Fatalf("closed session: row kept %v, err %v", live("s1"), s.Err())
	}
	if err := o.Close(ctx, s); err != nil || len(st.Take()) != 0 {
		t.Fatalf("second close: %v", err)
	}

	if _, err := k.Begin(ctx, "s2", "test"); err != nil {
		t.Fatal(err)
	}
	if err := o.EndDead(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	want = []string{"withdraw s2", "drop locks s2", "return claims s2", "wake q"}
	if got := st.Take(); !slices.Equal(got, want) || live("s2") {
		t.Fatalf("end dead: %q, want %q; row kept %v", got, want, live("s2"))
	}

	// A failed delete keeps the row and says so.
	s3, err := k.Begin(ctx, "s3", "test")
	if err != nil {
		t.Fatal(err)
	}
	dropErr = errors.New("away")
	if err := o.Close(ctx, s3); !errors.Is(err, dropErr) || !live("s3") {
		t.Fatalf("close with a failing drop: %v; row kept %v", err, live("s3"))
	}
}
