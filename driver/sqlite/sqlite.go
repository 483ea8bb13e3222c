// Package sqlite is baton's embedded backend, on SQLite through the pure-Go
// modernc.org/sqlite (no cgo: baton builds with CGO_ENABLED=0 and
// cross-compiles; chosen by measurement, see docs/benchmarks.md). Importing
// it registers the sqlite: DSN scheme with baton.
//
// DSNs: sqlite:///absolute/path.db, sqlite:relative/path.db and
// sqlite::memory: (a private in-memory database, for tests).
//
// All writes run in BEGIN IMMEDIATE transactions on one connection per
// process, so baton's own transactions never fail with SQLITE_BUSY inside a
// process; across processes the busy timeout serializes them. Wake-ups inside
// a process are direct calls; other processes notice a commit through
// PRAGMA data_version, checked when the WAL file is written (file events:
// inotify, kqueue, ...; then every millisecond for a few ms, since the
// commit's shared-memory update has no event) and every poll interval as a
// safety net. Where
// the platform has no file events, a waiting listener checks every
// millisecond.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// queries holds the named queries, one file per slice (sessions, locks,
// queue, events, notify), the same files in every backend.
//
//go:embed sql/*.sql
var queries embed.FS

//go:embed migrations/*.sql
var migrations embed.FS

// DriverName is the database/sql driver name of the SQLite driver baton
// uses, for programs that open the same file themselves.
const DriverName = "sqlite"

// Now is SQLite's clock in microseconds.
// It uses julianday, not unixepoch('subsec') (SQLite 3.42+), because
// triggers run in every client that writes to a subscribed table, whatever
// its SQLite version.
const Now = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"

// Driver is the SQLite backend.
type Driver struct {
	*sqlbase.DB
	flavor   Flavor
	path     string
	memory   bool
	migrator *sqlbase.Migrator
	hub      *hub
	prefix   string
	lines    *sqlbase.Lines[struct{}] // turnstiles' sessions (locks.go)
	waiting  sync.Map                 // clientID -> *listenState
	beat     beat
	reader   side // waiters' status reads (LockRequestStatuses)
	hot      side // the uncontended lock statements (quickly)
	// joined holds identifiers where this driver's last reader joined
	// other readers (fast_acquire_shared): the next reader goes there
	// first, without the inline attempt that readers beside readers
	// always fail; a refusal there unmarks the identifier.
	joined sqlbase.IdentSet
}

var _ driver.Driver = (*Driver)(nil)

func init() { driver.Register(driver.Adapt(Open), "sqlite") }

// ParseDSN returns the file path a sqlite: DSN names, or ":memory:".
func ParseDSN(dsn string) (string, error) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", fmt.Errorf("%w: sqlite DSN must start with sqlite: (got %q)", driver.ErrBadDSN, dsn)
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		return "", fmt.Errorf("%w: sqlite DSN %q: options after ? are not supported (docs/dsn.md)", driver.ErrBadDSN, dsn)
	}
	if rest == ":memory:" {
		return rest, nil
	}
	rest = strings.TrimPrefix(rest, "//")
	if rest == "" {
		return "", fmt.Errorf("%w: sqlite DSN %q names no file: write sqlite:PATH or sqlite:///abs/path.db", driver.ErrBadDSN, dsn)
	}
	return rest, nil
}

// Flavor is the database/sql SQLite driver underneath: its registered name
// and how to recognise its busy and locked errors. The default is the pure-Go
// modernc.org/sqlite; the opt-in package driver/sqlite/cgo swaps in
// mattn/go-sqlite3.
type Flavor struct {
	SQLDriver   string
	IsRetryable func(error) bool
}

// Pure is the default flavor, modernc.org/sqlite.
var Pure = Flavor{SQLDriver: DriverName, IsRetryable: IsRetryable}

// Open opens (creating if needed) the database a sqlite: DSN names. prefix
// is the table prefix.
func Open(ctx context.Context, dsn, prefix string) (*Driver, error) {
	return OpenFlavor(ctx, Pure, dsn, prefix)
}

// busyTimeout is how long a statement waits for another connection's
// write lock (SQLite's busy handler) before it fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// connString sets the driver's path (a unique name for an in-memory
// database) and returns the database/sql connection string.
func (d *Driver) connString(path string) (string, error) {
	if d.memory {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		d.path = "memory-" + hex.EncodeToString(rnd[:])
		return fmt.Sprintf("file:%s?mode=memory&cache=shared&_txlock=immediate&_busy_timeout=%d", d.path, busyTimeout.Milliseconds()), nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite path %q: %w", path, err)
	}
	d.path = abs
	return fileConnString(abs), nil
}

// fileConnString is the connection string of the file at the absolute
// path abs. It does not touch the driver: side connections open while
// other goroutines read d.path.
func fileConnString(abs string) string {
	// A new database gets 1 KiB pages (the pragma does nothing to an
	// existing one): every page a commit dirties is a WAL frame, and a
	// lock or a small message dirties a handful of pages whatever their
	// size (docs/benchmarks.md § SQLite page size). The pragma list runs
	// before the switch to WAL, which would fix the page size.
	return fmt.Sprintf("file:%s?_pragma=page_size(1024)&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=%d&_txlock=immediate",
		abs, busyTimeout.Milliseconds())
}

// ping opens the first connection. Several processes opening a new file at
// once race to switch it to WAL, which takes an exclusive lock and is not
// always covered by the busy timeout: a busy open is retried for a few
// seconds.
func ping(ctx context.Context, f Flavor, db *sql.DB, path string) error {
	for attempt := 0; ; attempt++ {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if !f.IsRetryable(err) || attempt >= 50 || ctx.Err() != nil {
			return openErr(path, err)
		}
		time.Sleep(time.Duration(10+attempt*5) * time.Millisecond)
	}
}

// openErr says why the database at path could not be opened.
func openErr(path string, err error) error {
	if strings.Contains(err.Error(), "not a database") {
		return fmt.Errorf("%w: sqlite:%s is not an SQLite database file: %v", driver.ErrBadDSN, path, err)
	}
	return fmt.Errorf("open sqlite database %s: %w", path, err)
}

// openOne opens a pool of one connection on conn, kept open: for the
// main connection, the renewals' own and a listener's.
func openOne(f Flavor, conn string) (*sql.DB, error) {
	db, err := sql.Open(f.SQLDriver, conn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// OpenFlavor is Open on another database/sql SQLite driver.
func OpenFlavor(ctx context.Context, f Flavor, dsn, prefix string) (*Driver, error) {
	path, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	d := &Driver{memory: path == ":memory:", flavor: f}
	d.hot.noWait, d.beat.noWait, d.beat.ckpt.noWait = true, true, true
	conn, err := d.connString(path)
	if err != nil {
		return nil, err
	}
	// One connection: in-process transactions queue in database/sql instead
	// of spinning on SQLITE_BUSY.
	db, err := openOne(f, conn)
	if err != nil {
		return nil, err
	}
	db.SetConnMaxLifetime(0)
	if err := ping(ctx, f, db, path); err != nil {
		db.Close()
		return nil, err
	}
	if err := d.setUp(db, prefix); err != nil {
		db.Close()
		return nil, err
	}
	d.startCheckpointer(ctx)
	return d, nil
}

// setUp reads the queries and migrations and builds the shared
// implementation on db.
func (d *Driver) setUp(db *sql.DB, prefix string) error {
	macros := map[string]string{
		"now": Now,
		// A new request row's id: the rowid SQLite would choose, but never
		// below 1, where the inline holders' ids are.
		"next_id": "max(coalesce((SELECT max(id) FROM " + prefix + "lock_requests), 0), 0) + 1",
		// An inline holder let go: uncounted, its columns
		// cleared.
		"let_go": "n_r = n_r - (h_mode = 'R'), n_w = n_w - (h_mode = 'W'), " +
			"h_id = NULL, h_session = NULL, h_client = NULL, h_mode = NULL, h_call = NULL, h_token = NULL, h_at = NULL",
	}
	q, err := sqlbase.LoadQueries(queries, "sql", prefix, macros, nil)
	if err != nil {
		return err
	}
	migs, err := sqlbase.LoadMigrations(migrations, "migrations", prefix)
	if err != nil {
		return err
	}
	d.hub = hubFor(d.path)
	d.prefix = prefix
	d.lines = d.newLines()
	d.DB = &sqlbase.DB{SQL: db, D: &sqlbase.Dialect{
		Name:            "sqlite",
		FinishMoves:     true,
		PrepareOnUse:    true,
		InsertReturning: true,
		UpdateReturning: true,
		DeleteReturning: true,
		Queries:         q,
		Wake: func(ctx context.Context, t *sqlbase.Tx, wake []driver.Request) error {
			t.AfterCommit(func() { d.hub.wake(wake) })
			return nil
		},
		IsRetryable: d.flavor.IsRetryable,
		Events:      events(prefix),
		Adopt:       d.adopt,
		Writers:     d.hub.writers,
	}}
	d.migrator = &sqlbase.Migrator{
		DB: db, Prefix: prefix, Migrations: migs, Now: Now,
		// An immediate transaction holds SQLite's write lock; DDL is
		// transactional, so concurrent migrators queue behind it.
		Locked: sqlbase.LockedInTx(db, driver.Statement{Query: "BEGIN IMMEDIATE"}),
	}
	return nil
}

// IsRetryable reports SQLite's busy and locked errors.
func IsRetryable(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff // the primary code of an extended one
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return false
}

// Migrate implements driver.Driver.
func (d *Driver) Migrate(ctx context.Context) ([]driver.MigrationStatus, error) {
	return d.migrator.Up(ctx)
}

// MigrationStatus implements driver.Driver.
func (d *Driver) MigrationStatus(ctx context.Context) ([]driver.MigrationStatus, error) {
	return d.migrator.Status(ctx)
}

// SetStatementTimeout implements driver.Driver: SQLite runs in the
// process, with no server that could stop answering; its busy timeout
// bounds a wait for the write lock.
func (d *Driver) SetStatementTimeout(time.Duration) {}

// LimitConns implements driver.Driver: SQLite has no server connections.
func (d *Driver) LimitConns(int) {}

// Embedded implements driver.Driver: the database runs in the process.
func (d *Driver) Embedded() bool { return true }

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
