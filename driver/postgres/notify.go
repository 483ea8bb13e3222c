package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/maintain"
)

// Notifier implements driver.Driver: the driver itself.
func (d *Driver) Notifier() driver.Notifier { return d }

// wake is the dialect's Wake: NOTIFY the clients, which PostgreSQL
// delivers when the transaction commits. A grant travels as
// "client:request:token:session:call" (its waiter needs no status read),
// a look as the client's id (once per client); payloads stay under
// NOTIFY's 8000 bytes. Clients in this process are handed their grants
// right after the commit, as a release's are (handLocal).
func (d *Driver) wake(ctx context.Context, t *sqlbase.Tx, wake []driver.Request) error {
	payloads := wakePayloads(wake, 7000)
	for _, payload := range payloads {
		if _, err := t.Tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", d.channel, payload); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	t.AfterCommit(func() { handLocal(payloads) })
	return nil
}

// wakePayloads writes wake's entries (parsePayload's format) into
// comma-separated payloads of at most about max bytes each.
func wakePayloads(wake []driver.Request, max int) []string {
	var out []string
	var b strings.Builder
	looked := map[string]bool{}
	for _, w := range wake {
		entry := w.ClientID
		if w.ID != 0 {
			entry += ":" + strconv.FormatInt(w.ID, 10) + ":" + strconv.FormatInt(w.Token, 10) + ":" + w.SessionID +
				":" + strconv.FormatInt(w.CallID, 10)
		} else if looked[w.ClientID] {
			continue
		} else {
			looked[w.ClientID] = true
		}
		if b.Len() > 0 && b.Len()+1+len(entry) > max {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(entry)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// SetWaiting implements driver.Driver; LISTEN needs no hint.
func (d *Driver) SetWaiting(string, bool) {}

// SetNotifying implements driver.Driver.
func (d *Driver) SetNotifying(clientID string, on bool) {
	if v, ok := d.notifying.Load(clientID); ok {
		v.(*atomic.Bool).Store(on)
	}
	if v, ok := d.pollers.Load(clientID); ok {
		v.(*poller).setOn(on)
	}
}

// Notify implements driver.Driver with NOTIFY, delivered by PostgreSQL in
// commit order, never on rollback; the same statement also stores the
// notification for clients that read it from the table (NotifyStatement).
func (d *Driver) Notify(ctx context.Context, channel, payload string) error {
	if _, err := d.ExecNamed(ctx, nil, "notify_send", d.notifyArgs(channel, payload)...); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// NotifyStatement implements driver.Driver: NOTIFY for the clients that
// LISTEN and, while some client reads notifications from the table
// (behind a transaction pooler without listen_dsn), an insert there, in
// one statement.
func (d *Driver) NotifyStatement(channel, payload string) (string, []any) {
	return d.Q("notify_send"), d.notifyArgs(channel, payload)
}

func (d *Driver) notifyArgs(channel, payload string) []any {
	return []any{d.notifyCh, channel, payload}
}

// Listen implements driver.Driver with LISTEN on a dedicated connection.
// It reconnects after errors and calls wake at least once per interval.
func (d *Driver) Listen(ctx context.Context, p driver.ListenParams) (func(), error) {
	stop, err := d.listenBy(ctx, p)
	if err != nil {
		return nil, err
	}
	w := &localWake{wake: p.Wake}
	local.Store(p.ClientID, w)
	return func() { local.CompareAndDelete(p.ClientID, w); stop() }, nil
}

// local holds the wake functions of the clients listening in this
// process, by client id (random, so unique across databases): a release in
// the same process hands them its grants as soon as it returns (handLocal);
// the NOTIFY that follows (or comes first) finds their waiters answered,
// which wake.Locks recognises as the same grant.
var local sync.Map // client id -> *localWake

type localWake struct {
	wake func(granted []driver.Request)
}

// handLocal hands the grants of payloads (parsePayload's format; an empty
// one has none) to the clients listening in this process; a client with a
// look in them waits for its NOTIFY.
func handLocal(payloads []string) {
	var entries []driver.Request
	for _, payload := range payloads {
		entries = append(entries, payloadEntries(payload, "")...)
	}
	order, byClient := sqlbase.ByClient(entries)
	for _, client := range order {
		v, ok := local.Load(client)
		if gs := byClient[client]; ok && gs != nil {
			v.(*localWake).wake(gs)
		}
	}
}

// noDirect reports that the driver has no direct connection to the
// server: behind a transaction pooler with no listen_dsn, LISTEN and
// turnstiles, which need a server session of their own, cannot work.
func (d *Driver) noDirect() bool { return d.pooled && d.listenCfg == d.cfg }

// listenBy starts the client's listener: LISTEN on a connection of its
// own, or polling behind a transaction pooler without listen_dsn.
func (d *Driver) listenBy(ctx context.Context, p driver.ListenParams) (func(), error) {
	if d.noDirect() {
		return d.pollOnly(p), nil
	}
	notifying := &atomic.Bool{}
	d.notifying.Store(p.ClientID, notifying)
	conn, err := d.listen(ctx)
	if err != nil {
		d.notifying.Delete(p.ClientID)
		return nil, err
	}
	l := &pgListener{d: d, p: p, notifying: notifying, conn: conn, failing: sqlbase.Failing{Log: d.Logger()}}
	lctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(lctx)
	}()
	return func() { cancel(); <-done; d.notifying.Delete(p.ClientID) }, nil
}

// pgListener is one client's LISTEN connection: it passes notifications
// on, and reconnects after errors (waking the client, since anything
// could have happened while disconnected).
type pgListener struct {
	d         *Driver
	p         driver.ListenParams
	notifying *atomic.Bool
	conn      *pgx.Conn       // nil while disconnected
	failing   sqlbase.Failing // the connection is lost (logged once until back)
}

func (l *pgListener) run(ctx context.Context) {
	defer func() {
		if l.conn != nil {
			l.conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if l.conn == nil && !l.reconnect(ctx) {
			continue
		}
		// The engine checks its waiting requests every interval itself
		// (locks.Service.pollDue): a wake-up here after a quiet interval
		// never came while the connection heard other clients' traffic.
		// The wait is bounded only to check, after listenCheck without a
		// notification, that the server still answers: a server that
		// went silent (a network that drops packets) would leave the
		// listener deaf for ever.
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := l.conn.WaitForNotification(wctx)
		quiet := err != nil && ctx.Err() == nil && wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			l.deliver(n)
		case ctx.Err() != nil:
			return
		case quiet && !l.conn.IsClosed():
			if err := l.ping(); err != nil {
				l.lost(err)
			}
		default:
			l.lost(err)
		}
	}
}

// listenCheck is how long the listener waits for a notification before it
// checks that the server still answers.
var listenCheck = time.Minute

// ping checks that the listener's server still answers, within the
// statement timeout.
func (l *pgListener) ping() error {
	ctx, cancel := l.d.bound.Context(context.Background())
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return l.d.bound.Err(context.Background(), ctx, err)
	}
	return nil
}

// deliver passes a notification on: a baton notification to the
// client's listeners, a grant or wake-up to the client it names.
func (l *pgListener) deliver(n *pgconn.Notification) {
	if n.Channel == l.d.notifyCh {
		if l.notifying.Load() {
			ch, payload, _ := strings.Cut(n.Payload, " ")
			l.p.Notify(ch, payload)
		}
		return
	}
	if mine, granted := parsePayload(n.Payload, l.p.ClientID); mine {
		l.p.Wake(granted)
	}
}

// lost drops a broken connection; run reconnects after an interval.
func (l *pgListener) lost(err error) {
	l.failing.Failed(context.Background(), "baton: postgres: the LISTEN connection failed; waiters fall back on the poll interval until it is back (logged once until it works again): "+err.Error())
	l.conn.Close(context.Background())
	l.conn = nil
}

// reconnect waits an interval and connects again; false when it could not
// (or ctx ended).
func (l *pgListener) reconnect(ctx context.Context) bool {
	if !maintain.Sleep(ctx, l.p.Interval) {
		return false
	}
	conn, err := l.d.listen(ctx)
	if err != nil {
		l.failing.Failed(ctx, "baton: postgres: reconnecting the LISTEN connection failed (logged once until it works again): "+err.Error())
		return false
	}
	l.failing.Worked("baton: postgres: the LISTEN connection works again")
	l.conn = conn
	l.p.Wake(nil) // anything could have happened while disconnected
	return true
}

func (d *Driver) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := connectDirect(ctx, d.listenCfg)
	if err != nil {
		return nil, err
	}
	for _, ch := range []string{d.channel, d.notifyCh} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return nil, err
		}
	}
	return conn, nil
}

// parsePayload reads a wake-up payload: comma-separated entries, each a
// client id ("wake up and look") or "client:request:token:session:call"
// (that request of that session's lock call was granted with that token;
// from clients of earlier versions without session and call). mine is
// true when an entry is for clientID; granted is nil when any entry for it asks for a look.
func parsePayload(payload, clientID string) (mine bool, granted []driver.Request) {
	own := payloadEntries(payload, clientID)
	_, byClient := sqlbase.ByClient(own)
	return len(own) > 0, byClient[clientID]
}

// payloadEntries reads a payload's entries as WakeClients entries (a
// look has no ID), only those of clientID unless it is empty.
func payloadEntries(payload, clientID string) []driver.Request {
	var out []driver.Request
	for payload != "" {
		var entry string
		entry, payload, _ = strings.Cut(payload, ",")
		client, rest, hinted := strings.Cut(entry, ":")
		if clientID != "" && client != clientID {
			continue
		}
		r, ok := parseGrant(rest)
		if !hinted || !ok {
			r = driver.Request{}
		}
		r.ClientID = client
		out = append(out, r)
	}
	return out
}

// parseGrant reads "request:token" of a payload's entry; false when it
// is not that.
func parseGrant(s string) (driver.Request, bool) {
	idText, rest, _ := strings.Cut(s, ":")
	tokenText, rest, _ := strings.Cut(rest, ":")
	session, callText, withCall := strings.Cut(rest, ":")
	id, err1 := strconv.ParseInt(idText, 10, 64)
	token, err2 := strconv.ParseInt(tokenText, 10, 64)
	r := driver.Request{ID: id, SessionID: session, Status: driver.StatusGranted, Token: token}
	var err3 error
	if withCall {
		r.CallID, err3 = strconv.ParseInt(callText, 10, 64)
	}
	return r, err1 == nil && err2 == nil && err3 == nil
}

// connectCause picks the real cause out of a failed connection: with
// sslmode=prefer (the default) pgx tries TLS first and then plain text, and
// joins both failures, so the first words of its message are often
// "tls error: server refused TLS connection" although the plain-text attempt
// failed for the reason that matters (unknown role, missing database).
func connectCause(err error) error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		if errs := joined.Unwrap(); len(errs) > 0 {
			return errs[len(errs)-1]
		}
	}
	return err
}

// pollOnly stands in for LISTEN behind a transaction pooler with no
// listen_dsn: LISTEN through the pooler would run on a server connection
// that goes back to the pool and hear nothing. Waiters are woken every
// interval instead (lock hand-off and queue wake-ups take up to an
// interval), and notifications are read from the table every interval,
// while the client is registered as a reader there (senders then store
// them); both are said once.
func (d *Driver) pollOnly(p driver.ListenParams) func() {
	interval := sqlbase.DefaultInterval(p.Interval)
	d.listenWarn.Do(func() {
		d.Logger().Warn("baton: PostgreSQL behind a transaction pooler and no listen_dsn in the DSN: LISTEN cannot work, so waiters poll every " +
			interval.String() + " and baton notifications (Listen) are delivered from a table, polled every " + interval.String() +
			"; add listen_dsn=<a direct postgres:// DSN, URL-encoded> for wake-ups on commit")
	})
	po := &poller{d: d, clientID: p.ClientID, ttl: pollerTTL(interval), pump: sqlbase.StartPump(d.DB, p.Notify), failing: sqlbase.Failing{Log: d.Logger()}}
	d.pollers.Store(p.ClientID, po)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	every := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			maintain.Every(stop, interval, f)
		}()
	}
	every(func() { p.Wake(nil); po.pump.Poke() })
	// Apart, so that a slow renewal never delays a wake-up.
	every(func() { po.renew(stop) })
	return func() {
		close(stop)
		wg.Wait()
		d.pollers.Delete(p.ClientID)
		po.stop()
	}
}

// pollerTTL is how long a reader's registration runs: many intervals, so
// that a few failed renewals (a database under load) lose nothing, and at
// least half a minute, so that renewing costs little.
func pollerTTL(interval time.Duration) time.Duration {
	return max(10*interval, 30*time.Second)
}

// poller reads one client's notifications from {p}notifications. While it
// reads (SetNotifying on) it keeps the client registered in
// {p}notify_pollers, renewed when a third of the registration has run;
// once it stops reading the registration runs out by itself (a client
// whose listeners come and go, a queue consumer between claims, does not
// write at each change), and it is deleted when listening stops.
type poller struct {
	d        *Driver
	clientID string
	ttl      time.Duration
	pump     *sqlbase.NotifyPump

	mu      sync.Mutex
	on      bool
	stopped bool
	until   time.Time       // the registration runs at least until then
	failing sqlbase.Failing // the last registration failed (said once)
}

// setOn turns reading on or off. Turning it on registers the client
// before placing the reader's cursor, so that every notification sent
// after it returns is stored for the client.
func (po *poller) setOn(on bool) {
	po.mu.Lock()
	defer po.mu.Unlock()
	if po.stopped {
		return
	}
	po.on = on
	if on {
		po.registerLocked(nil)
	}
	po.pump.SetOn(on)
}

// renew extends the registration when it is due, while reading.
func (po *poller) renew(stop <-chan struct{}) {
	po.mu.Lock()
	defer po.mu.Unlock()
	if po.on && !po.stopped {
		po.registerLocked(stop)
	}
}

// registerLocked registers the client, or extends its registration, when
// a third of it has run; stop, when it closes, cuts the statement short.
func (po *poller) registerLocked(stop <-chan struct{}) {
	if time.Until(po.until) > po.ttl*2/3 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(po.ttl/3, 10*time.Second))
	defer cancel()
	if stop != nil {
		go cancelOn(ctx, stop, cancel)
	}
	start := time.Now()
	if _, err := po.d.ExecNamed(ctx, nil, "notify_poller_register", po.clientID, po.ttl.Microseconds()); err != nil {
		// Said even when stop cut it short.
		po.failing.Failed(context.Background(), "baton: registering as a reader of the notifications table failed (logged once until it works again; notifications may be missed meanwhile): "+err.Error())
		return
	}
	po.failing.Worked("baton: registering as a reader of the notifications table works again")
	// The server counts from a moment after start: the registration runs
	// at least this long.
	po.until = start.Add(po.ttl)
}

// cancelOn cancels ctx when stop closes first.
func cancelOn(ctx context.Context, stop <-chan struct{}, cancel context.CancelFunc) {
	select {
	case <-stop:
		cancel()
	case <-ctx.Done():
	}
}

// stop ends reading and deletes the registration.
func (po *poller) stop() {
	po.mu.Lock()
	defer po.mu.Unlock()
	po.stopped = true
	po.pump.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = po.d.ExecNamed(ctx, nil, "notify_poller_delete", po.clientID)
}
