package batontest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// Driver opens the driver of the database a DSN names (its driver package
// linked into the test), as another program on that database would; it is
// closed when the test ends.
func Driver(t testing.TB, dsn string) driver.Driver {
	t.Helper()
	d, err := driver.Open(context.Background(), dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// ReapSession deletes session id from the database a DSN names, as a
// reaper in another process does with a session whose lease ran out.
func ReapSession(t testing.TB, dsn, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := Driver(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SessionDelete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
