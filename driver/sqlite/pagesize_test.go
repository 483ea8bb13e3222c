package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/driver/sqlite"
)

// TestPageSize: a database baton creates has 1 KiB pages and is in WAL
// mode; a database created before keeps the page size it has.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pageSize := func(d *sqlite.Driver) (n int, mode string) {
		t.Helper()
		if err := d.SQL.QueryRowContext(ctx, "PRAGMA page_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := d.SQL.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return n, mode
	}
	d, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(dir, "new.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n, mode := pageSize(d); n != 1024 || mode != "wal" {
		t.Errorf("a new database: page size %d, journal mode %s; want 1024, wal", n, mode)
	}
	_ = d.Close()

	old := filepath.Join(dir, "old.db")
	db, err := sql.Open(sqlite.DriverName, old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA page_size = 4096; CREATE TABLE app (x)"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	d, err = sqlite.Open(ctx, "sqlite:"+old, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n, mode := pageSize(d); n != 4096 || mode != "wal" {
		t.Errorf("an existing database: page size %d, journal mode %s; want 4096 kept, wal", n, mode)
	}
}
