package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Notifier implements driver.Driver: the driver itself.
func (d *Driver) Notifier() driver.Notifier { return d }

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
	// turnstiles are the file's turnstiles in this process (locks.go).
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
