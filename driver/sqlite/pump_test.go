package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// TestPumpReportsFailedRead: a notification pump whose read failed says
// so (the listener's safety net pokes it again although nothing was
// committed since), and says so no longer once a read works and delivers
// what was committed meanwhile.
func TestPumpReportsFailedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openMigrated(t, filepath.Join(t.TempDir(), "pump.db"))
	got := make(chan string, 10)
	p := sqlbase.StartPump(d.DB, func(_, payload string) { got <- payload })
	defer p.Stop()
	p.SetOn(true)
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			p.Poke()
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := d.DB.SQL.ExecContext(ctx, "ALTER TABLE baton_notifications RENAME TO baton_notifications_away"); err != nil {
		t.Fatal(err)
	}
	until("a failed read", p.Failed)
	if _, err := d.DB.SQL.ExecContext(ctx, "ALTER TABLE baton_notifications_away RENAME TO baton_notifications"); err != nil {
		t.Fatal(err)
	}
	if err := d.DB.Notify(ctx, "ch", "after"); err != nil {
		t.Fatal(err)
	}
	until("a read that works", func() bool { return !p.Failed() })
	select {
	case pl := <-got:
		if pl != "after" {
			t.Fatalf("delivered %q, want %q", pl, "after")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the notification committed after the failure was not delivered")
	}
}
