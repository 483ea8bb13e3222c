package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

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

// side is a connection of its own to a file database, opened on first
// use: nil for an in-memory database, while it cannot open (the next use
// tries again), and after Close.
type side struct {
	db     atomic.Pointer[sqlbase.DB]
	mu     sync.Mutex // held while it opens or closes
	closed bool
	// noWait sets no busy timeout once it is open: a statement that meets
	// another connection's write lock fails at once (the hot connection,
	// quickly; the renewal's, SessionHeartbeat).
	noWait bool
}

// get returns the connection, opening it if it is not open yet.
func (s *side) get(d *Driver) *sqlbase.DB {
	if db := s.db.Load(); db != nil || d.memory {
		return db
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if db := s.db.Load(); db != nil || s.closed {
		return db
	}
	db := d.openSide(s.noWait)
	s.db.Store(db)
	return db
}

// close closes it, and no later get opens it.
func (s *side) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	db := s.db.Swap(nil)
	if db == nil {
		return nil
	}
	return db.Close()
}

// checkpointEvery is how often the side connection looks for commits to
// checkpoint (see startCheckpointer) while the database is written.
const checkpointEvery = 250 * time.Millisecond

// checkpointIdle is how long the checkpointer waits for its next look
// after one that saw no commit.
const checkpointIdle = time.Second

// checkpointQuiet is how long a WAL may keep the frames of a quiet
// database (commits now and then, as an idle process's lease renewal
// once a second) before the checkpointer copies them: a checkpoint after
// each renewal cost an idle process two fsyncs a second, and the renewal
// after it a third (the WAL's restart).
const checkpointQuiet = 5 * time.Second

// checkpoints decides, tick by tick, when the checkpointer checkpoints:
// never when nothing was committed since its last checkpoint; at once
// when commits came in two ticks in a row (a database in use, whose WAL
// would grow); else once checkpointQuiet has passed since the last one.
type checkpoints struct {
	last    time.Time // the last checkpoint (zero: none yet)
	pending bool      // commits since then
	busy    bool      // the previous tick saw commits
}

// interval is how long to wait for the next tick: checkpointEvery after a
// tick that saw commits, else checkpointIdle.
func (c *checkpoints) interval() time.Duration {
	if c.busy {
		return checkpointEvery
	}
	return checkpointIdle
}

// tick records whether anything was committed since the previous tick
// and reports whether to checkpoint now.
func (c *checkpoints) tick(committed bool, now time.Time) bool {
	inUse := committed && c.busy
	c.busy = committed
	c.pending = c.pending || committed
	if !c.pending || !inUse && now.Sub(c.last) < checkpointQuiet {
		return false
	}
	c.last, c.pending = now, false
	return true
}

// startCheckpointer moves WAL checkpoints off the main connection: it
// turns the main connection's automatic checkpoint off and checkpoints on
// the side connection instead (PASSIVE: it never waits for, or blocks,
// writers). An automatic checkpoint runs in the commit that crosses the
// WAL's threshold and waits for the database file's fsync: a lock or a
// message that happened to commit then would wait milliseconds.
// When the pragma cannot be set, SQLite's own checkpoints go on.
func (d *Driver) startCheckpointer(ctx context.Context) {
	renewal := d.beatDB()
	side := d.beat.ckpt.get(d)
	if renewal == nil || side == nil {
		return
	}
	if _, err := d.DB.SQL.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		return
	}
	// Nor in a renewal's commit: the checkpointer does it.
	_, _ = renewal.SQL.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0")
	// The checkpointer's connection never writes, so its data_version
	// moves with every commit of the file, the renewals' included.
	version, err := side.SQL.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		version = nil // every tick counts as a commit
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.checkpointLoop(cctx, side, version)
		// A last one: a process that ends soon after its writes (a
		// one-shot command) leaves a short WAL behind.
		_, _ = side.SQL.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	}()
	d.beat.stop = func() { cancel(); <-done }
}

// checkpointLoop checkpoints on side when checkpoints.tick says so, until
// ctx ends. A tick saw commits when side's data_version moved (version
// nil: it cannot tell, and counts a commit).
func (d *Driver) checkpointLoop(ctx context.Context, side *sqlbase.DB, version *sql.Stmt) {
	if version != nil {
		defer version.Close()
	}
	last := int64(-1)
	var due checkpoints
	// Without ctx's end, as the listener's looks (versionWatch.look):
	// neither statement waits for a lock (PASSIVE never does).
	quiet := context.WithoutCancel(ctx)
	t := time.NewTimer(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := int64(-1)
		if version == nil || version.QueryRowContext(quiet).Scan(&v) != nil {
			v = -1
		}
		committed := v == -1 || v != last
		last = v
		if due.tick(committed, time.Now()) {
			_, _ = side.SQL.ExecContext(quiet, "PRAGMA wal_checkpoint(PASSIVE)")
		}
		t.Reset(due.interval())
	}
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

// QueuesReady implements driver.Driver on the status reads' connection
// (LockRequestStatuses), with the names as one JSON array (one statement
// prepared once), in ctx without its end, as the listener's looks: in WAL
// mode a read never waits for a lock, and a context that can end costs
// the statement two goroutines that watch it. An idle worker polls every
// five poll intervals.
func (d *Driver) QueuesReady(ctx context.Context, queues []string) ([]string, error) {
	db := d.reader.get(d)
	if db == nil || len(queues) == 0 {
		return d.DB.QueuesReady(ctx, queues)
	}
	list, err := json.Marshal(queues)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryNamed(context.WithoutCancel(ctx), nil, "queues_ready_json", string(list))
	return sqlbase.ScanNames("queues_ready_json", rows, err)
}

// LockRequestStatuses implements driver.Driver on a connection of its own
// (d.reader) where the database is a file. On the main connection every
// read of a woken waiter queued behind the lock traffic it was waiting
// for (a fifth of 8-way contention's time); in WAL mode a reader neither
// waits for the writer nor blocks it, and sees every commit made before
// its read began.
//
// The ids go as one JSON array (request_statuses_json), so that the
// statement is prepared once instead of parsed for every list: a status
// read follows every commit of another client of the file.
func (d *Driver) LockRequestStatuses(ctx context.Context, ids []int64) (map[int64]driver.Request, error) {
	out := make(map[int64]driver.Request, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	db := d.reader.get(d)
	if db == nil {
		db = d.DB
	}
	list := make([]byte, 0, 2+8*len(ids))
	list = append(list, '[')
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	rows, err := db.QueryNamed(ctx, nil, "request_statuses_json", string(append(list, ']')))
	if err != nil {
		return nil, err
	}
	rs, err := sqlbase.ScanRequests(rows)
	if err != nil {
		return nil, fmt.Errorf("request_statuses_json: %w", err)
	}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out, nil
}

// openSide opens another one-connection pool on the file, or returns nil.
// noWait: once open (with the busy timeout: the connection's first
// statements switch it to WAL, which may wait), with no busy timeout, and
// when the checkpointer runs, with no automatic checkpoint either
// (startCheckpointer: a commit on it would otherwise checkpoint in its
// turn). It does not touch the driver: it runs while other goroutines
// read d.path.
func (d *Driver) openSide(noWait bool) *sqlbase.DB {
	db, err := openOne(d.flavor, fileConnString(d.path))
	if err != nil {
		return nil
	}
	if noWait {
		// Open it now, while the busy timeout covers the switch to WAL
		// (tried again for a few seconds, as the main connection is).
		if err := ping(context.Background(), d.flavor, db, d.path); err != nil {
			db.Close()
			return nil
		}
		set := []string{"PRAGMA busy_timeout = 0"}
		if d.beat.stop != nil {
			set = append(set, "PRAGMA wal_autocheckpoint = 0")
		}
		for _, q := range set {
			if _, err := db.Exec(q); err != nil {
				db.Close()
				return nil
			}
		}
	}
	return &sqlbase.DB{SQL: db, D: d.DB.D}
}

// Close implements driver.Driver: the main connection, the renewal's, the
// checkpointer's, the status reader's and the hot one.
func (d *Driver) Close() error {
	if d.beat.stop != nil {
		d.beat.stop()
	}
	d.lines.CloseAll() // gives back the turnstiles held in this process
	return errors.Join(d.DB.Close(), d.beat.close(), d.beat.ckpt.close(), d.reader.close(), d.hot.close())
}
