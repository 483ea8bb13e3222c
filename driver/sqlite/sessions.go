package sqlite

import (
	"context"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Sessions implements driver.Driver: the driver itself.
func (d *Driver) Sessions() driver.Sessions { return d }

// beat is the lease renewal's own connection to a file database. On the
// main connection a renewal waits behind every transaction the client has
// queued (database/sql hands the one connection to a random waiter) and
// behind a commit's checkpoint; under load that held renewals off for the
// whole 3 s lease, and the sessions were lost. On a connection of its own
// it needs only SQLite's write lock, which WAL mode frees between
// transactions and during checkpoints: it tries every millisecond while
// another connection holds it (no busy timeout once open; SessionHeartbeat).
// It opens with the driver (startCheckpointer). The checkpointer has a
// connection of its own (ckpt): on this one, a renewal due while a
// checkpoint waited for the database file's fsync waited with it, and
// under a full test run's load a 1 s-lease session was lost beside
// another process's writes (TestRenewalBesideOtherProcessWrites,
// TestRenewalBesideCheckpoint).
type beat struct {
	side        // nil: it could not open; the main connection renews
	stop func() // ends the checkpointer
	ckpt side   // the checkpointer's connection: it only reads and checkpoints
}

// SessionHeartbeat implements driver.Driver on the renewal's own
// connection (a file database; an in-memory one has only the main one),
// which has no busy timeout once open: untilFree tries it every
// millisecond while another connection holds the write lock. Through
// SQLite's busy handler (sleeps of 1, 2, 5, 10 ... up to 100 ms) a
// heartbeat gave it about ten tries, and another connection writing back
// to back (another process, or this one's lock traffic) left none of them
// a free moment: the session was lost (TestRenewalBesideOtherProcessWrites).
// The renewal does not queue in the process's writer gate: there it would
// wait for whatever the writer ahead of it waits for.
func (d *Driver) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	db := d.beatDB()
	if db == nil {
		return d.DB.SessionHeartbeat(ctx, p)
	}
	var n int
	var refs []driver.SessionRef
	// Each try in ctx without its end, as the hot connection's statements
	// (quickly): untilFree stops at ctx's end between tries, which fail at
	// once. A try cut off by ctx made database/sql open the connection
	// anew, with the busy timeout of a new connection, and the renewals
	// after it would wait in SQLite's busy handler again.
	quiet := context.WithoutCancel(ctx)
	err := d.untilFree(ctx, func() (err error) {
		n, refs, err = db.SessionHeartbeat(quiet, p)
		return err
	})
	return n, refs, err
}

func (d *Driver) beatDB() *sqlbase.DB { return d.beat.get(d) }
