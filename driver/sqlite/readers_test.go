package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
)

// TestJoinedReaders: a reader that joined other readers sends the
// driver's next reader straight to fast_acquire_shared. That statement
// joins only granted readers, so once they are gone the reader after
// them falls back to the inline holder, and beside a writer it is
// refused by both.
func TestJoinedReaders(t *testing.T) {
	ctx := context.Background()
	d := batontest.Migrated(t, "sqlite:"+filepath.Join(t.TempDir(), "r.db")).(*sqlite.Driver)
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "r"}
	acquire := func(sess string, mode driver.LockMode) (driver.Request, bool) {
		t.Helper()
		r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: sess, ClientID: "c", Ident: id, Mode: mode, CallID: 1})
		if err != nil {
			t.Fatalf("%s's %s: %v", sess, mode, err)
		}
		return r, ok
	}
	release := func(sessions ...string) {
		t.Helper()
		for _, s := range sessions {
			if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: s, Kind: id.Kind, NS: id.NS, Name: id.Name}); err != nil || n != 1 {
				t.Fatalf("release by %s: %d, %v", s, n, err)
			}
		}
	}
	for _, s := range []string{"r1", "r2", "r3"} {
		if r, ok := acquire(s, driver.ModeRead); !ok || r.Inline != (s == "r1") {
			t.Fatalf("reader %s: %+v, %v; want granted, inline only for the first", s, r, ok)
		}
	}
	release("r1", "r2", "r3")
	if r, ok := acquire("r4", driver.ModeRead); !ok || !r.Inline {
		t.Fatalf("a reader after the readers left: %+v, %v; want the inline holder", r, ok)
	}
	if r, ok := acquire("r5", driver.ModeRead); !ok || r.Inline {
		t.Fatalf("a reader beside it: %+v, %v; want a request row", r, ok)
	}
	release("r4", "r5")
	if _, ok := acquire("w", driver.ModeWrite); !ok {
		t.Fatal("a writer refused on a free lock")
	}
	if r, ok := acquire("r6", driver.ModeRead); ok {
		t.Fatalf("a reader granted beside a writer: %+v", r)
	}
	release("w")
}
