package mysql

import (
	"context"
	"database/sql"
	sqldrv "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/maintain"
)

// Notifier implements driver.Driver: the driver itself.
func (d *Driver) Notifier() driver.Notifier { return d }

// local holds the wake functions of the clients listening in this process,
// by client id (random, so unique across databases): a waker in the same
// process calls them directly after commit instead of going through the
// database.
var local sync.Map // client id -> *localClient

// grant, when set, is handed the grants a release in this process made
// to the client's requests (id, status and token: no status read).
type localClient struct {
	wake  func()
	grant func(granted []driver.Request)
}

// wakeClients is the dialect's Wake: the clients of grants and looks the
// engine made in t (wakeGranted).
func (d *Driver) wakeClients(ctx context.Context, t *sqlbase.Tx, wake []driver.Request) error {
	after, err := d.wakeGranted(ctx, t.Tx, wake)
	if after != nil && err == nil {
		t.AfterCommit(after)
	}
	return err
}

// wakeGranted wakes the clients of grants made in the transaction on q:
// inside it, it bumps the sequence number of every other process's client
// and reads the connection ids of their listeners; the returned func, run
// after the commit, hands a client listening in this process its grants
// (when they carry ids and tokens: its waiters need no status read) or
// wakes it, and interrupts the others' listeners. When the bump fails the
// func still tells the clients of this process, for a caller whose grants
// are committed already (releaseCall); one in the transaction drops it.
func (d *Driver) wakeGranted(ctx context.Context, q querier, grants []driver.Request) (func(), error) {
	order, byClient := sqlbase.ByClient(grants)
	var remote []string
	var tell []func()
	for _, id := range order {
		v, ok := local.Load(id)
		if !ok {
			remote = append(remote, id)
			continue
		}
		lc, gs := v.(*localClient), byClient[id]
		if lc.grant != nil && gs != nil {
			tell = append(tell, func() { lc.grant(gs) })
		} else {
			tell = append(tell, lc.wake)
		}
	}
	var conns []int64
	var err error
	if len(remote) > 0 {
		conns, err = d.wakeRemote(ctx, q, remote)
	}
	if len(tell) == 0 && len(conns) == 0 {
		return nil, err
	}
	return func() {
		for _, f := range tell {
			f()
		}
		if len(conns) > 0 {
			d.interrupt(conns)
		}
	}, err
}

// wakeRemote bumps the sequence numbers of other processes' clients and
// returns the connection ids of their listeners.
func (d *Driver) wakeRemote(ctx context.Context, q querier, remote []string) ([]int64, error) {
	start := d.serverStart.Load()
	if len(remote) == 1 {
		return d.wakeOne(ctx, q, start, remote[0])
	}
	// Sorted, so that concurrent wakers lock the rows in one order.
	sort.Strings(remote)
	args := sqlbase.StringArgs(remote)
	if _, err := q.ExecContext(ctx, list(d.wq["wake_many"], len(remote)), args...); err != nil {
		return nil, fmt.Errorf("wake_many: %w", err)
	}
	rows, err := q.QueryContext(ctx, list(d.wq["wake_conns"], len(remote)), append([]any{start}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("wake_conns: %w", err)
	}
	conns, err := sqlbase.ScanAll(rows, sqlbase.ScanInt64)
	if err != nil {
		return nil, fmt.Errorf("wake_conns: %w", err)
	}
	return slices.DeleteFunc(conns, func(id int64) bool { return id <= 0 }), nil
}

// wakeOne bumps one client's sequence number in one statement: its
// listener's connection id comes back as the insert id (none when it has
// no listener registered since the server's start).
func (d *Driver) wakeOne(ctx context.Context, q querier, start int64, clientID string) ([]int64, error) {
	res, err := q.ExecContext(ctx, d.wq["wake_one"], start, clientID)
	if err != nil {
		return nil, fmt.Errorf("wake_one: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil || id <= 0 {
		return nil, err
	}
	return []int64{id}, nil
}

// interrupt sends KILL QUERY to listener connections, asynchronously: the
// releasing call does not wait for it. A listener connection is always
// held by its listener, never in a pool, so this never targets the
// connection it runs on. Errors are ignored: the connection may be gone
// (error 1094), or belong to another database user (1095, the waker lacks
// CONNECTION_ADMIN); the listener's poll interval bounds the delay then.
//
// One goroutine sends them, one at a time, on a connection of its own
// (killDB), and a connection asked for again before its turn is
// interrupted once. On MariaDB a KILL QUERY of a connection in SLEEP()
// can take the server seconds while other connections sleep too (the
// listeners of other clients), and while it runs a second KILL of the
// same connection keeps new connections to the whole server waiting:
// concurrent KILLs made connects exceed the connect timeout. On its own
// connection a slow KILL holds back no statement of the client (with
// MaxConns 1, the lease renewal).
func (d *Driver) interrupt(conns []int64) {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	if d.closed {
		return
	}
	if d.kills == nil {
		d.kills = make(map[int64]struct{}, len(conns))
	}
	for _, id := range conns {
		d.kills[id] = struct{}{}
	}
	if d.killing {
		return
	}
	d.killing = true
	d.bg.Add(1)
	go d.sendKills()
}

// sendKills sends the KILLs interrupt asked for until none is left.
func (d *Driver) sendKills() {
	defer d.bg.Done()
	for {
		d.bgMu.Lock()
		ids := d.kills
		d.kills = nil
		if len(ids) == 0 {
			d.killing = false
			d.bgMu.Unlock()
			return
		}
		d.bgMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for id := range ids {
			_, _ = d.killDB.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(id, 10))
		}
		cancel()
	}
}

// killQuery interrupts the statement running on a connection. The id is an
// integer read from the database, never user input; KILL takes no bind
// variables.
func (d *Driver) killQuery(ctx context.Context, connID int64) {
	_, _ = d.SQL.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(connID, 10))
}

// SetWaiting implements driver.Driver. Nothing to do: waiters are woken by
// interruption, and the poll interval is the safety net either way.
func (d *Driver) SetWaiting(clientID string, waiting bool) {}

// listener is one client's wake-up loop.
type listener struct {
	d        *Driver
	clientID string
	wake     func()
	// net is the safety net's wake-up (safetyNet): the notifications'
	// read, not the engine's lock check, which polls on its own.
	net      func()
	local    *localClient
	interval time.Duration

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopping atomic.Bool
	connID   atomic.Int64
	once     sync.Once
}

// Listen implements driver.Driver. It registers a dedicated connection for
// the client (so that the first registration's errors reach the caller),
// then loops on wake_poll: one statement per max(interval, minSleep)
// while idle, which returns early when the client's seq moves or the
// statement is interrupted. wake is called then; the notifications are
// also read at least once per interval in any case (the safety net for a
// lost interruption). When the connection
// breaks (server restart, network), the loop backs off, reconnects and
// registers the new connection id.
func (d *Driver) Listen(ctx context.Context, p driver.ListenParams) (func(), error) {
	// KILL QUERY carries no payload: every wake-up makes the engine query,
	// and the notification pump read.
	pump := sqlbase.StartPump(d.DB, p.Notify)
	wake := func() { p.Wake(nil); pump.Poke() }
	l, err := d.listen(ctx, p.ClientID, wake, pump.Poke, p.Wake, p.Interval)
	if err != nil {
		pump.Stop()
		return nil, err
	}
	d.pumps.Store(p.ClientID, pump)
	return func() { l.stop(); d.pumps.Delete(p.ClientID); pump.Stop() }, nil
}

// SetNotifying implements driver.Driver.
func (d *Driver) SetNotifying(clientID string, on bool) {
	if v, ok := d.pumps.Load(clientID); ok {
		v.(*sqlbase.NotifyPump).SetOn(on)
	}
}

// Notify implements driver.Driver: the insert, committed on its own, then
// a wake-up of every registered client (their sequence numbers bumped,
// each statement on its own, then their listeners interrupted). A
// listener woken reads the notification, committed before; one that
// registers meanwhile reads it when it starts. Once the insert is in,
// the notification is sent: a wake-up that fails is no error, the
// listeners' poll bounds its delay, as it does a lost KILL's.
func (d *Driver) Notify(ctx context.Context, channel, payload string) error {
	if _, err := d.ExecNamed(ctx, nil, "notify_insert", channel, payload); err != nil {
		return err
	}
	rows, err := d.SQL.QueryContext(ctx, d.wq["wake_all_clients"])
	if err != nil {
		return nil
	}
	ids, err := sqlbase.ScanAll(rows, sqlbase.ScanString)
	if err != nil {
		return nil
	}
	if after, _ := d.wakeGranted(ctx, d.SQL, sqlbase.Looks(ids)); after != nil {
		after()
	}
	return nil
}

func (d *Driver) listen(ctx context.Context, clientID string, wake, net func(), grant func([]driver.Request), interval time.Duration) (*listener, error) {
	l := &listener{d: d, clientID: clientID, wake: wake, net: net, interval: sqlbase.DefaultInterval(interval), done: make(chan struct{})}
	l.local = &localClient{wake: wake, grant: grant}
	local.Store(clientID, l.local)
	// Registrations left by processes that died before the server's last
	// start: their connection ids mean nothing any more.
	if start := d.serverStart.Load(); start > 0 {
		_, _ = d.SQL.ExecContext(ctx, d.wq["wake_purge_stale"], start)
	}
	conn, err := l.register(ctx)
	if err != nil {
		local.CompareAndDelete(clientID, l.local)
		return nil, fmt.Errorf("mysql %s: listen: %w", d.addr, err)
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	d.track(l, true)
	go l.run(conn)
	return l, nil
}

// track records a running listener (on) or forgets a stopped one, for
// Close to stop those still running.
func (d *Driver) track(l *listener, on bool) {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	if !on {
		delete(d.listeners, l)
		return
	}
	if d.listeners == nil {
		d.listeners = map[*listener]bool{}
	}
	d.listeners[l] = true
}

// register takes a connection of the listeners' pool and records
// its id.
func (l *listener) register(ctx context.Context) (*sql.Conn, error) {
	conn, err := l.d.listenDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		discard(conn)
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, l.d.wq["wake_register"], l.clientID, id, id); err != nil {
		discard(conn)
		return nil, fmt.Errorf("wake_register: %w", err)
	}
	l.connID.Store(id)
	return conn, nil
}

// discard closes a connection and keeps database/sql from pooling it again.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return sqldrv.ErrBadConn })
	_ = conn.Close()
}

func isInterrupted(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == errQueryInterrupt
}

// run polls for wake-ups on conn until the listener stops, registering a
// new connection whenever one fails.
func (l *listener) run(conn *sql.Conn) {
	defer close(l.done)
	p := &poller{l: l, conn: conn, last: -1} // the first poll returns at once and wakes
	defer p.close()
	p.lastWake.Store(time.Now().UnixNano())
	go p.safetyNet()
	for l.running() && p.step() {
	}
}

// running reports whether the listener is to go on.
func (l *listener) running() bool {
	return !l.stopping.Load() && l.ctx.Err() == nil
}

// poller is the state of one listener's loop: its connection, the last
// wake-up sequence number it saw, and its reconnection backoff.
type poller struct {
	l        *listener
	conn     *sql.Conn
	last     int64
	backoff  time.Duration
	noRows   int
	lastWake atomic.Int64
}

// step polls once, or registers a new connection when it has none;
// false when the listener stops meanwhile.
func (p *poller) step() bool {
	if p.conn == nil {
		return p.reconnect()
	}
	return p.poll()
}

// close gives up the connection, if any, when the loop ends.
func (p *poller) close() {
	if p.conn != nil {
		discard(p.conn)
	}
}

func (p *poller) wake() {
	p.lastWake.Store(time.Now().UnixNano())
	p.l.wake()
}

// safetyNet reads the notifications at least once per interval even when
// the loop is stuck (a statement on a connection the network dropped) or
// a wake-up was lost (a notifier that died between its commit and its
// interruption). The engine's lock waits are not woken: they are checked
// every interval by the engine itself (driver.ListenParams), and a wake
// here on top of that doubled a waiting client's status checks.
func (p *poller) safetyNet() {
	maintain.Every(p.l.done, p.l.interval/4, func() {
		if time.Since(time.Unix(0, p.lastWake.Load())) >= p.l.interval {
			p.lastWake.Store(time.Now().UnixNano())
			p.l.net()
		}
	})
}

// reconnect registers a new connection after the backoff; false when the
// listener stops meanwhile.
func (p *poller) reconnect() bool {
	l := p.l
	if !maintain.Sleep(l.ctx, p.backoff) {
		return false
	}
	p.backoff = min(2*p.backoff+10*time.Millisecond, l.interval)
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	c, err := l.register(ctx)
	if err != nil {
		return true
	}
	// The server may have restarted: new start time, and new connection
	// ids.
	l.d.refreshServerStart(ctx, c)
	p.conn, p.last, p.backoff = c, -1, 0
	return true
}

// minSleep is the least a listener's statement sleeps when nothing wakes
// it. Its length bounds nothing a waiter sees: an interruption ends it,
// one that lands between two statements is seen by the next (seq), and
// what no interruption announces (a notification made in the caller's
// transaction, a waker not allowed to KILL) is read by the safety net and
// the engine's poll every interval. It bounds only how long a connection
// the network dropped goes unnoticed (wake-ups then come from the poll
// until the listener reconnects), and makes an idle listener one
// statement per minSleep instead of one per poll interval.
const minSleep = 5 * time.Second

// poll waits for the next wake-up on the connection (a poll lasts
// max(interval, minSleep); much longer means a dead connection); false
// when the listener stops meanwhile.
func (p *poller) poll() bool {
	l := p.l
	var seq, slept int64
	sleep := max(l.interval, minSleep)
	ctx, cancel := context.WithTimeout(l.ctx, sleep+5*time.Second)
	err := p.conn.QueryRowContext(ctx, l.d.wq["wake_poll"], p.last, sleep.Seconds(), l.clientID).Scan(&seq, &slept)
	cancel()
	switch {
	case err == nil:
		p.polled(seq, slept)
	case isInterrupted(err):
		p.wake()
	case errors.Is(err, sql.ErrNoRows):
		return p.reregister()
	default:
		if !l.running() {
			return false
		}
		// Connection trouble: a wake-up may have been missed.
		p.drop()
		p.wake()
	}
	return true
}

// polled takes a poll's answer: the client's sequence number, and
// whether the sleep was interrupted (SLEEP returns 1 then on MySQL;
// MariaDB fails the statement with error 1317 instead). Either change
// wakes the client.
func (p *poller) polled(seq, slept int64) {
	p.noRows = 0
	if seq != p.last || slept != 0 {
		p.wake()
	}
	p.last = seq
}

// reregister registers the connection again after its registration
// vanished; false when the listener stops meanwhile.
func (p *poller) reregister() bool {
	l := p.l
	p.noRows++
	if p.noRows > 1 && !maintain.Sleep(l.ctx, min(time.Duration(p.noRows)*10*time.Millisecond, l.interval)) {
		return false
	}
	id := l.connID.Load()
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	_, err := p.conn.ExecContext(ctx, l.d.wq["wake_register"], l.clientID, id, id)
	cancel()
	if err != nil {
		discard(p.conn)
		p.conn = nil
	}
	p.last = -1
	return true
}

// drop gives up the connection.
func (p *poller) drop() {
	discard(p.conn)
	p.conn = nil
	p.l.connID.Store(0)
}

// stop ends the loop promptly: interrupt its statement (again, should the
// interruption land between two statements), give up after a moment by
// cancelling (which closes the connection), then remove the registration.
func (l *listener) stop() {
	l.once.Do(func() {
		l.stopping.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.interruptLoop(ctx)
		l.cancel()
		<-l.done
		_, _ = l.d.SQL.ExecContext(ctx, l.d.wq["wake_unregister"], l.clientID)
		local.CompareAndDelete(l.clientID, l.local)
		l.d.track(l, false)
	})
}

// interruptLoop interrupts the loop's statement every 20ms, ten times at
// most, until the loop ends.
func (l *listener) interruptLoop(ctx context.Context) {
	for i := 0; i < 10; i++ {
		if id := l.connID.Load(); id > 0 {
			l.d.killQuery(ctx, id)
		}
		select {
		case <-l.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
