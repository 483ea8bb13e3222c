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

// DriverTx runs f in a transaction of d and commits it; an error fails the
// test (and rolls back).
func DriverTx(t testing.TB, d driver.Driver, f func(ctx context.Context, tx driver.Tx) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f(ctx, tx); err != nil {
		_ = tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// ReapSession deletes session id from the database a DSN names, as a
// reaper in another process does with a session whose lease ran out.
func ReapSession(t testing.TB, dsn, id string) {
	t.Helper()
	DriverTx(t, Driver(t, dsn), func(ctx context.Context, tx driver.Tx) error {
		return tx.SessionDelete(ctx, id)
	})
}

// Migrated is Driver with baton's schema migrated.
func Migrated(t testing.TB, dsn string) driver.Driver {
	t.Helper()
	d := Driver(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// Prepared is Migrated with the driver's statements prepared.
func Prepared(t testing.TB, dsn string) driver.Driver {
	t.Helper()
	d := Migrated(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}
