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

	"github.com/fsnotify/fsnotify"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

//go:embed queries.sql
var queriesSQL string

//go:embed sqlite.sql
var ownSQL string

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
	lines    *sqlbase.Lines[struct{}] // turnstiles' sessions (turnstile.go)
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

// listenState is what SetWaiting and SetNotifying change for one client's
// poller.
type listenState struct {
	waiting atomic.Bool
	poke    chan struct{} // cuts an idle sleep short when a waiter appears
	pump    *sqlbase.NotifyPump
}

func (st *listenState) hurry() {
	select {
	case st.poke <- struct{}{}:
	default:
	}
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
	q, err := sqlbase.ParseQueryFiles(prefix, macros, queriesSQL, ownSQL)
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

// SetWaiting implements driver.Driver.
func (d *Driver) SetWaiting(clientID string, waiting bool) {
	if v, ok := d.waiting.Load(clientID); ok {
		st := v.(*listenState)
		if !st.waiting.Swap(waiting) && waiting {
			st.hurry()
		}
	}
}

// SetNotifying implements driver.Driver.
func (d *Driver) SetNotifying(clientID string, on bool) {
	if v, ok := d.waiting.Load(clientID); ok {
		st := v.(*listenState)
		st.pump.SetOn(on)
		st.hurry()
	}
}

// Notify implements driver.Driver: the insert, then an in-process poke;
// other processes see the commit through data_version.
func (d *Driver) Notify(ctx context.Context, channel, payload string) error {
	if err := d.DB.Notify(ctx, channel, payload); err != nil {
		return err
	}
	d.hub.pokeAll()
	return nil
}

// Listen implements driver.Driver: in-process wake-ups through the hub, and
// a data_version check on a connection of its own for other processes'
// commits.
func (d *Driver) Listen(_ context.Context, p driver.ListenParams) (func(), error) {
	clientID := p.ClientID
	st := &listenState{poke: make(chan struct{}, 1), pump: sqlbase.StartPump(d.DB, p.Notify)}
	d.waiting.Store(clientID, st)
	d.hub.add(clientID, hubEntry{wake: p.Wake, poke: st.pump.Poke})
	stopHub := func() { d.hub.remove(clientID); d.waiting.Delete(clientID); st.pump.Stop() }
	if d.memory {
		// A private in-memory database has no other process.
		return stopHub, nil
	}
	pdb, err := openOne(d.flavor, "file:"+d.path+"?_busy_timeout=10000")
	if err != nil {
		stopHub()
		return nil, err
	}
	// In WAL mode (the driver's) a commit writes only the WAL: writes to
	// the database file are checkpoints, which commit nothing, and waking
	// for them doubled an idle process's looks.
	var mode string
	err = pdb.QueryRow("PRAGMA journal_mode").Scan(&mode)
	// The look's statement, prepared once: parsed on every look it was
	// a fifth of an idle process's CPU.
	var version *sql.Stmt
	if err == nil {
		version, err = pdb.Prepare("PRAGMA data_version")
	}
	if err != nil {
		pdb.Close()
		stopHub()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &versionWatch{p: p, st: st, version: version, changes: d.watchFiles(ctx, strings.EqualFold(mode, "wal")), last: -1, lastWake: time.Now(),
		failing: sqlbase.Failing{Log: d.Logger()}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pdb.Close()
		for w.next(ctx) {
			w.look(ctx)
		}
	}()
	return func() { cancel(); <-done; stopHub() }, nil
}

// versionWatch is a listener's check of other processes' commits: PRAGMA
// data_version on a connection of its own, looked at when the files
// change (or every millisecond without file events) while someone waits,
// and every poll interval otherwise.
type versionWatch struct {
	p        driver.ListenParams
	st       *listenState
	version  *sql.Stmt   // PRAGMA data_version, on a connection of its own
	changes  <-chan bool // a write event, true when the watch paused after it; nil: no file events, poll
	last     int64       // the last data_version seen (-1: none yet)
	lastWake time.Time
	burst    time.Time       // until then, look every millisecond
	lastLook time.Time       // the last data_version check
	failing  sqlbase.Failing // the last look failed (logged once until it works)
}

// wait is how long to sleep before the next look.
func (w *versionWatch) wait() time.Duration {
	if !w.st.waiting.Load() && !w.st.pump.On() {
		return w.p.Interval
	}
	if w.changes == nil || time.Now().Before(w.burst) {
		return time.Millisecond
	}
	return w.p.Interval
}

// next waits until it is time to look; false when ctx ends.
func (w *versionWatch) next(ctx context.Context) bool {
	for {
		t := time.NewTimer(w.wait())
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-w.st.poke:
			t.Stop()
			return true
		case paused, ok := <-w.changes:
			t.Stop()
			if !ok {
				w.changes = nil // the watcher failed: poll
				continue
			}
			// A write to the database or its WAL: the commit's wal-index
			// update (shared memory, no file event) may follow a moment
			// later, so look again for a while: watchBurst when the
			// watch paused after the event (the writes it did not report
			// meanwhile are looked for too), else watchSettle (a later
			// write brings its own event). Events closer together than
			// watchGap share one look.
			burst := watchSettle
			if paused {
				burst = watchBurst
			}
			if until := time.Now().Add(burst); until.After(w.burst) {
				w.burst = until
			}
			if time.Since(w.lastLook) < watchGap {
				continue
			}
			return true
		case <-t.C:
			return true
		}
	}
}

// look reads data_version and wakes the client when it changed, or when
// a poll interval has passed since the last wake-up (the safety net).
func (w *versionWatch) look(ctx context.Context) {
	var v int64
	w.lastLook = time.Now()
	// Without ctx's end: the pragma on its own connection never waits
	// for a lock, and a statement whose context can end costs two
	// goroutines (database/sql's and the SQLite driver's watchers of the
	// context), started and ended on every look of an idle process.
	if err := w.version.QueryRowContext(context.WithoutCancel(ctx)).Scan(&v); err != nil {
		w.failing.Failed(ctx, "baton: sqlite: checking for other processes' commits failed (logged once until it works again; the next poll retries): "+err.Error())
		return
	}
	w.failing.Worked("")
	if v == w.last && time.Since(w.lastWake) < w.p.Interval {
		return
	}
	moved := v != w.last
	changed := moved && w.last != -1
	w.last, w.lastWake = v, time.Now()
	w.wake(moved, changed)
}

// wake wakes the client and, when data_version moved (this look is the
// first, or another connection committed) or the pump's last read failed,
// its notification pump. A wake-up of the safety net with nothing
// committed since the last look leaves the pump alone: its read that
// followed that look found everything committed (this process's own
// notifications poke it directly), and an idle process read the
// notifications table twice a second for nothing. When another connection
// committed (changed) and the client reads notifications, it also has the
// client's queue consumers look: the commit may have been a trigger
// writing events, which sends no wake-up.
func (w *versionWatch) wake(moved, changed bool) {
	w.p.Wake(nil)
	if moved || w.st.pump.Failed() {
		w.st.pump.Poke()
	}
	if changed && w.st.pump.On() {
		w.p.Notify("#q#*", "")
	}
}

// watchBurst is how long a waiting listener looks every millisecond for
// other processes' commits after a write event to the database or its WAL;
// otherwise it looks every poll interval (the safety net for a missed
// event), instead of every millisecond.
const watchBurst = 20 * time.Millisecond

// watchSettle is watchBurst after a write event that did not pause the
// watch (a commit's after a quiet spell: quietSpell): any later write
// brings an event of its own, so the looks only wait for the commit's
// wal-index update. An idle process's own lease renewal, once a second,
// cost it twenty looks before.
const watchSettle = 5 * time.Millisecond

// watchGap: write events closer than this to the last look share it (a
// commit writes several pages; a look per write cost 15% of contended lock
// throughput in one process).
const watchGap = 200 * time.Microsecond

// fileWatch shares one file watcher per database path among the
// listeners of a process (one watcher per listener multiplied the events,
// and their cost, by the number of clients).
type fileWatch struct {
	mu   sync.Mutex
	subs map[chan bool]bool
	stop func()
}

var (
	watchesMu sync.Mutex
	watches   = map[string]*fileWatch{}
)

// watchFiles reports writes (by any process) to the WAL when wal is set
// (the database is in WAL mode: its commits write nothing else), else to
// the database file and its WAL, on the returned channel until ctx ends;
// nil when the platform gives no file events (the listener then polls).
// The first listener of a path decides what its watcher reports.
func (d *Driver) watchFiles(ctx context.Context, wal bool) <-chan bool {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	fw := watches[d.path]
	if fw == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil
		}
		// The directory: the WAL file comes and goes.
		if err := w.Add(filepath.Dir(d.path)); err != nil {
			w.Close()
			return nil
		}
		fw = &fileWatch{subs: map[chan bool]bool{}, stop: func() { w.Close() }}
		watches[d.path] = fw
		names := watched{d.path + "-wal": true}
		if !wal {
			names[d.path] = true
		}
		go fw.run(w, filepath.Dir(d.path), names)
	}
	ch := make(chan bool, 1)
	fw.mu.Lock()
	fw.subs[ch] = true
	fw.mu.Unlock()
	go func() {
		<-ctx.Done()
		watchesMu.Lock()
		defer watchesMu.Unlock()
		fw.mu.Lock()
		delete(fw.subs, ch)
		last := len(fw.subs) == 0
		fw.mu.Unlock()
		if last {
			delete(watches, d.path)
			fw.stop()
		}
	}()
	return ch
}

// watched are the files (the WAL, and the database unless it is in WAL
// mode) whose writes a fileWatch reports.
type watched map[string]bool

// written reports whether ev is a write to a watched file.
func (names watched) written(ev fsnotify.Event) bool {
	return names[ev.Name] && ev.Has(fsnotify.Write|fsnotify.Create)
}

func (fw *fileWatch) run(w *fsnotify.Watcher, dir string, names watched) {
	paused := false
	resume := make(chan struct{}, 1)
	var quiet quietSpell
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !paused && names.written(ev) {
				paused = fw.written(w, dir, resume, quiet.event(time.Now()))
			}
		case <-resume:
			paused = false
			if err := w.Add(dir); err != nil {
				fw.end() // no more events: the listeners poll
				return
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		}
	}
}

// quietSpell tells the writes of a commit after a quiet spell (an idle
// process's lease renewal, once a second) from those of a database in
// use: only the former leave the watch running, so that the looks after
// them last watchSettle, not watchBurst. A database in use keeps the
// pause: an event per write made the looks cost hand-offs a quarter of
// their speed.
type quietSpell struct {
	start time.Time // the first event after a quiet spell
	last  time.Time // the latest event
	n     int       // the events since start
}

// quietGap is the silence that makes a quiet spell; quietEvents the
// events a commit may bring within quietCommit of the first (a small
// commit's writes, which the kernel may or may not merge).
const (
	quietGap    = 100 * time.Millisecond
	quietEvents = 4
	quietCommit = time.Millisecond
)

// event records an event at now and reports whether it belongs to a
// commit after a quiet spell (the watch need not pause).
func (q *quietSpell) event(now time.Time) bool {
	if now.Sub(q.last) >= quietGap {
		q.start, q.n = now, 0
	}
	q.last = now
	q.n++
	return q.n <= quietEvents && now.Sub(q.start) < quietCommit
}

// written tells the listeners of a write to the database or its WAL.
// Unless the spell of events is quiet, the events stop for half of
// watchBurst (a busy database writes thousands of pages a second, and
// each event costs CPU), until resume says to watch again; the listeners
// then look every millisecond for watchBurst, which outlasts the pause,
// and otherwise for watchSettle. It reports whether the events stopped.
func (fw *fileWatch) written(w *fsnotify.Watcher, dir string, resume chan<- struct{}, quiet bool) bool {
	paused := !quiet && w.Remove(dir) == nil
	fw.mu.Lock()
	for ch := range fw.subs {
		// One pending report at most: a pause is never dropped for a
		// report without one.
		p := paused
		select {
		case old := <-ch:
			p = p || old
		default:
		}
		ch <- p
	}
	fw.mu.Unlock()
	if !paused {
		return false
	}
	time.AfterFunc(watchBurst/2, func() { resume <- struct{}{} })
	return true
}

// end closes the listeners' channels and forgets them.
func (fw *fileWatch) end() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for ch := range fw.subs {
		close(ch)
	}
	fw.subs = map[chan bool]bool{}
}

// hub delivers in-process wake-ups between every client of one database
// file in this process.
type hub struct {
	mu      sync.RWMutex
	clients map[string]hubEntry
	// writers queues this process's writers of the file: transactions
	// (sqlbase.Dialect.Writers) and the lock fast paths' statements.
	writers *sqlbase.Gate
	// turnstiles are the file's turnstiles in this process (turnstile.go).
	turnstiles turnstiles
}

// hubEntry is one client: its lock wake-up (Wake of its ListenParams)
// and its notification poke.
type hubEntry struct {
	wake func(granted []driver.Request)
	poke func()
}

var (
	hubsMu sync.Mutex
	hubs   = map[string]*hub{}
)

func hubFor(path string) *hub {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	h := hubs[path]
	if h == nil {
		h = &hub{clients: map[string]hubEntry{}, writers: sqlbase.NewGate()}
		hubs[path] = h
	}
	return h
}

func (h *hub) add(id string, e hubEntry) {
	h.mu.Lock()
	h.clients[id] = e
	h.mu.Unlock()
}

func (h *hub) remove(id string) {
	h.mu.Lock()
	delete(h.clients, id)
	h.mu.Unlock()
}

// wake hands each client in this process its grants, or wakes it to look
// when any of its entries is not a grant (the entries as WakeClients
// takes them).
func (h *hub) wake(wake []driver.Request) {
	order, byClient := sqlbase.ByClient(wake)
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, id := range order {
		if e, ok := h.clients[id]; ok {
			e.wake(byClient[id])
		}
	}
}

func (h *hub) pokeAll() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, e := range h.clients {
		e.poke()
	}
}

// LockFastAcquire implements driver.Driver in one autocommit statement
// on a free identifier: the instance becomes its inline holder. A reader beside other readers takes a request row with
// a second statement; a writer refused by the first needs the slow path.
func (d *Driver) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	leave, err := d.hub.writers.Enter(ctx)
	if err != nil {
		return driver.Request{}, false, err
	}
	defer leave()
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true}
	// The mode as a plain string: database/sql converts a named string
	// type by reflection.
	args := []any{p.SessionID, p.ClientID, p.Kind, []byte(p.NS), []byte(p.Name), string(p.Mode), p.CallID}
	// shared is the reader's request row beside granted readers.
	shared := func() error {
		err := d.quickly(ctx, nil, func(ctx context.Context, db *sqlbase.DB) error {
			return db.RowNamed(ctx, nil, "fast_acquire_shared", args...).Scan(&r.ID, &r.Token)
		})
		if err == nil {
			r.Inline = false
			d.joined.Add(p.Ident)
		} else {
			d.joined.Remove(p.Ident)
		}
		return err
	}
	joining := p.Mode == driver.ModeRead && d.joined.Has(p.Ident)
	if joining {
		switch err = shared(); {
		case err == nil:
			return r, true, nil
		case !errors.Is(err, sql.ErrNoRows):
			return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
		}
	}
	inline := append(args, sqlbase.HolderID())
	err = d.quickly(ctx, nil, func(ctx context.Context, db *sqlbase.DB) error {
		return db.RowNamed(ctx, nil, "fast_acquire", inline...).Scan(&r.ID, &r.Token)
	})
	if errors.Is(err, sql.ErrNoRows) && p.Mode == driver.ModeRead && !joining {
		err = shared()
	}
	if errors.Is(err, sql.ErrNoRows) {
		return driver.Request{}, false, nil
	}
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
	}
	return r, true, nil
}

// adopt is the dialect's Adopt hook: in the transaction that is about to
// change the identifier's requests, its inline holder becomes a request
// row under the same id, so the slow path sees only request rows. The
// counters and the fence (st) stay as they are: they counted it already.
func (d *Driver) adopt(ctx context.Context, t *sqlbase.Tx, st *driver.IdentState) error {
	if st.Readers == 0 && st.Writers == 0 {
		return nil // nothing granted, so no inline holder
	}
	return d.adoptIdent(ctx, t.Tx, st.Ident)
}

// adoptIdent moves id's inline holder, if any, into a request row in tx.
func (d *Driver) adoptIdent(ctx context.Context, tx *sql.Tx, id driver.Ident) error {
	args := []any{id.Kind, []byte(id.NS), []byte(id.Name)}
	res, err := d.ExecNamed(ctx, tx, "inline_adopt", args...)
	if err != nil {
		return fmt.Errorf("inline_adopt: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if _, err := d.ExecNamed(ctx, tx, "inline_clear", args...); err != nil {
		return fmt.Errorf("inline_clear: %w", err)
	}
	return nil
}

// LockFastRelease implements driver.Driver: one autocommit statement when
// every instance it releases is an inline holder or every one a request
// row, see release. The session's turnstiles in scope go after it, once
// the release is committed: a contender woken by one finds the lock free.
func (d *Driver) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	defer d.letGo(p.SessionID, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name})
	if p.Limit > 0 && !p.InlineOnly {
		return d.releaseNewest(ctx, nil, p) // a transaction: it enters the gate itself
	}
	leave, err := d.hub.writers.Enter(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer leave()
	return d.release(ctx, nil, p)
}

// LockReleaseTx implements driver.Locks: the same statements in the
// engine's transaction.
func (d *Driver) LockReleaseTx(ctx context.Context, tx driver.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	t, ok := tx.(*sqlbase.Tx)
	if !ok {
		return 0, nil, fmt.Errorf("sqlite: LockReleaseTx: a transaction of another driver (%T)", tx)
	}
	return d.release(ctx, t, p)
}

// release releases in t (nil: autocommit statements) the session's
// instances p names: its inline holders (release_inline) and its granted
// request rows (fast_release), one statement when the first finds only
// one kind: the inline holders first where the engine knows the session
// never waited there (p.InlineOnly), the request rows first otherwise.
// Each statement says whether the other kind is there too. Autocommit,
// another call's Adopt may move an inline holder into a request row
// between the two statements; a request row statement after the
// inline one catches it (once the inline holders are let go there is
// nothing left to move), so the rows go last whenever in doubt. A
// release of the newest few instances of a name (p.Limit) that may find
// request rows moves the inline holder among them first, in one
// transaction (releaseNewest).
func (d *Driver) release(ctx context.Context, t *sqlbase.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	if p.Limit > 0 && !p.InlineOnly {
		return d.releaseNewest(ctx, t, p)
	}
	var tx *sql.Tx
	if t != nil {
		tx = t.Tx
	}
	n, waiting := 0, []driver.Ident(nil)
	if !p.InlineOnly {
		m, w, inline, err := d.releaseRows(ctx, tx, p)
		if err != nil || m > 0 && inline == 0 {
			return m, w, err
		}
		n, waiting = m, w
	}
	m, w, more, err := d.releaseInline(ctx, tx, p)
	n, waiting = n+m, append(waiting, w...)
	switch {
	case err != nil:
		return 0, nil, err
	case m > 0 && !more, p.Limit > 0 && m >= p.Limit:
		return n, waiting, nil
	case p.Limit > 0:
		p.Limit -= m
	}
	m, w, _, err = d.releaseRows(ctx, tx, p)
	return n + m, append(waiting, w...), err
}

// releaseInline lets the session's inline holders p names go, in one
// statement in tx (nil: autocommit): how many, the identifiers with
// waiters, and whether the session has granted request rows in scope
// too.
func (d *Driver) releaseInline(ctx context.Context, tx *sql.Tx, p driver.FastReleaseParams) (int, []driver.Ident, bool, error) {
	var n int
	var waiting []driver.Ident
	var more bool
	name, args := "release_inline_name", []any{p.SessionID, p.Kind, []byte(p.NS), []byte(p.Name)}
	if p.Name == "" {
		name, args = "release_inline_ns", args[:3]
	}
	err := d.quickRows(ctx, tx, func(rows *sql.Rows) (err error) {
		n, waiting, more, err = scanInline(rows, p)
		return err
	}, name, args...)
	if err != nil {
		return 0, nil, false, fmt.Errorf("release_inline: %w", err)
	}
	return n, waiting, more, nil
}

// scanInline reads release_inline's rows and closes them: how many inline
// holders it let go, the identifiers with waiters, and whether the session
// has granted request rows in scope too.
func scanInline(rows *sql.Rows, p driver.FastReleaseParams) (int, []driver.Ident, bool, error) {
	defer rows.Close()
	n := 0
	more := false
	var waiting []driver.Ident
	for rows.Next() {
		var name []byte
		var np int64
		var has bool
		if err := rows.Scan(&name, &np, &has); err != nil {
			return 0, nil, false, err
		}
		n++
		more = more || has
		if np > 0 {
			waiting = append(waiting, driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)})
		}
	}
	return n, waiting, more, rows.Err()
}

// releaseNewest releases the newest p.Limit instances of a name in t (nil:
// a transaction of its own): the inline holder moved among the request
// rows first (adopt), then the newest deleted.
func (d *Driver) releaseNewest(ctx context.Context, t *sqlbase.Tx, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	if t != nil {
		if err := d.adoptIdent(ctx, t.Tx, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}); err != nil {
			return 0, nil, err
		}
		n, waiting, _, err := d.releaseRows(ctx, t.Tx, p)
		return n, waiting, err
	}
	t, err := d.BeginTx(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer t.Rollback()
	n, waiting, err := d.releaseNewest(ctx, t, p)
	if err != nil {
		return 0, nil, err
	}
	if err := t.Commit(); err != nil {
		return 0, nil, err
	}
	return n, waiting, nil
}

// releaseRows deletes the session's granted request rows p names in tx
// (nil: autocommit), in one statement: how many, the identifiers with
// waiters, and how many inline holders the session has in scope (0 when
// it deleted nothing: the statement then returns no row to say it).
func (d *Driver) releaseRows(ctx context.Context, tx *sql.Tx, p driver.FastReleaseParams) (int, []driver.Ident, int64, error) {
	var n int
	var waiting []driver.Ident
	var inline int64
	name, args := "fast_release_name", []any{p.SessionID, p.Kind, []byte(p.NS), sqlbase.ReleaseLimit(p), []byte(p.Name)}
	if p.Name == "" {
		name, args = "fast_release_ns", args[:4]
	}
	err := d.quickRows(ctx, tx, func(rows *sql.Rows) (err error) {
		n, waiting, inline, err = scanReleased(rows)
		return err
	}, name, args...)
	if err != nil {
		return 0, nil, 0, err
	}
	return n, waiting, inline, nil
}

// quickRows runs the named query through quickly and hands its rows to
// scan, which closes them.
func (d *Driver) quickRows(ctx context.Context, tx *sql.Tx, scan func(*sql.Rows) error, name string, args ...any) error {
	return d.quickly(ctx, tx, func(ctx context.Context, db *sqlbase.DB) error {
		rows, err := db.QueryNamed(ctx, tx, name, args...)
		if err != nil {
			return err
		}
		return scan(rows)
	})
}

// quickly runs f, one statement of the lock fast paths, in tx when tx is
// not nil and otherwise as an autocommit statement on the hot connection
// (no busy timeout once open), in ctx without its end, through
// untilFree. A context that can end costs every statement two goroutines,
// database/sql's and the SQLite driver's, that watch it, and their
// wake-ups: a fifth to a third of an uncontended lock-and-release pair on
// this file (docs/benchmarks.md, "SQLite: the uncontended statements
// without a watcher"). The call's end still bounds what may wait: the
// gate of this process's writers (entered in ctx), and untilFree's tries
// while another process holds the write lock. An in-memory database has
// no hot connection: f runs on the main one, in ctx.
func (d *Driver) quickly(ctx context.Context, tx *sql.Tx, f func(ctx context.Context, db *sqlbase.DB) error) error {
	if tx == nil {
		if db := d.hot.get(d); db != nil {
			quiet := context.WithoutCancel(ctx)
			return d.untilFree(ctx, func() error { return f(quiet, db) })
		}
	}
	return f(ctx, d.DB)
}

// untilFree runs f, one autocommit statement on a connection with no busy
// timeout, and again every millisecond while it fails with SQLITE_BUSY
// (another process's write lock: it wrote nothing), until ctx ends (its
// error) or the busy timeout has passed (SQLITE_BUSY). SQLite's own busy
// handler sleeps 1, 2, 5, 10 ... up to 100 ms between tries: a writer of
// another process that writes back to back left a statement a handful of
// tries in a second.
func (d *Driver) untilFree(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end := time.Now().Add(busyTimeout)
	for {
		err := f()
		if !d.flavor.IsRetryable(err) || time.Now().After(end) {
			return err
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// scanReleased reads fast_release's rows, one per released instance with
// its identifier's waiting count and the session's inline holders in
// scope, and closes them: how many instances it released, the
// identifiers with waiters, and the inline holders.
func scanReleased(rows *sql.Rows) (int, []driver.Ident, int64, error) {
	defer rows.Close()
	n := 0
	var inline int64
	seen := map[driver.Ident]bool{}
	var waiting []driver.Ident
	for rows.Next() {
		var id driver.Ident
		var ns, name []byte
		var np sql.NullInt64
		if err := rows.Scan(&id.Kind, &ns, &name, &np, &inline); err != nil {
			return 0, nil, 0, err
		}
		n++
		id.NS, id.Name = string(ns), string(name)
		if np.Int64 > 0 && !seen[id] {
			seen[id] = true
			waiting = append(waiting, id)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, 0, err
	}
	return n, waiting, inline, nil
}

// Embedded implements driver.Driver: the database runs in the process.
func (d *Driver) Embedded() bool { return true }
