package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/sqldriver"
)

// beat is the lease renewal's own connection to a file database. On the
// main connection a renewal waits behind every transaction the client has
// queued (database/sql hands the one connection to a random waiter) and
// behind a commit's checkpoint; under load that held renewals off for the
// whole 3 s lease, and the sessions were lost. On a connection of its own
// it needs only SQLite's write lock, which WAL mode frees between
// transactions and during checkpoints.
type beat struct {
	once sync.Once
	db   *sqldriver.DB // nil: it could not open; the main connection renews
}

// SessionHeartbeat implements driver.Driver on the renewal's own
// connection (a file database; an in-memory one has only the main one).
func (d *Driver) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	if db := d.beatDB(); db != nil {
		return db.SessionHeartbeat(ctx, p)
	}
	return d.DB.SessionHeartbeat(ctx, p)
}

func (d *Driver) beatDB() *sqldriver.DB {
	if d.memory {
		return nil
	}
	d.beat.once.Do(func() {
		conn, err := d.connString(d.path)
		if err != nil {
			return
		}
		db, err := sql.Open(d.flavor.SQLDriver, conn)
		if err != nil {
			return
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		d.beat.db = &sqldriver.DB{SQL: db, D: d.DB.D}
	})
	return d.beat.db
}

// Close implements driver.Driver: the main connection and the renewal's.
func (d *Driver) Close() error {
	err := d.DB.Close()
	d.beat.once.Do(func() {}) // no renewal connection after Close
	if d.beat.db != nil {
		err = errors.Join(err, d.beat.db.Close())
	}
	return err
}
