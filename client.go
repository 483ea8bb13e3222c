package baton

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/locks"
	"github.com/batonhq/baton/internal/maintain"
	"github.com/batonhq/baton/internal/mq"
	"github.com/batonhq/baton/internal/txn"
	"github.com/batonhq/baton/internal/wake"
)

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// Prefix is put before every table name baton creates ("baton_" when
	// empty). Letters, digits and underscores only.
	Prefix string
	// NoMigrate skips applying migrations on Open; run Client.Migrate or
	// `baton migrate` instead.
	NoMigrate bool
	// Lease is how long a session survives without a heartbeat: after its
	// process dies, its locks are freed within about Lease + Heartbeat.
	// Default 3s.
	Lease time.Duration
	// Heartbeat is how often sessions are renewed and dead sessions are
	// looked for. Default 0.3 × Lease (under a second by default, which
	// also keeps the pooled connection from needing a liveness ping).
	Heartbeat time.Duration
	// PollInterval bounds how long a lost wake-up can delay a waiter (a
	// lock waiter one interval, a waiting consumer five); at most one
	// cheap query per interval per process, not per waiter. Default 500ms.
	PollInterval time.Duration
	// Name is the default owner name of this client's sessions (default:
	// the program's name).
	Name string
	// Retention is how long finished messages are kept in the history
	// (default: completed and cancelled 24h, dead 7 days).
	Retention Retention
	// Retry is the backoff between a message's attempts (default: 1s
	// doubling to at most 10m, ±20%).
	Retry RetryPolicy
	// Logger receives every error of baton's background work (renewals,
	// reaping, recovery), which never reaches a caller otherwise. Default:
	// slog.Default().
	Logger *slog.Logger
	// Observer receives handler outcomes, lock waits, deadlocks and lost
	// sessions, for metrics (see the metrics package). Default: none.
	Observer Observer
	// StatementTimeout bounds each statement (or short transaction) baton
	// sends to a database server whose context has no deadline: a server
	// that stops answering once connected (stopped, behind a network that
	// drops packets, a stalled proxy) then fails the call with ErrNoAnswer
	// instead of hanging it for ever. A context with a deadline keeps its
	// own. Statements that wait in the server by design (the wake-up
	// listener's, lock waits with a server-side timeout) are bounded by
	// their wait plus a margin instead, and migrations not at all; waits
	// for a lock or a message are waits between statements, never cut.
	// Default 30s; negative: no bound but the context's. SQLite, which
	// has no server, ignores it.
	StatementTimeout time.Duration
	// MaxConns, when above 0, bounds the server connections the client's
	// statements hold at once on PostgreSQL and MySQL/MariaDB (one pool;
	// a contended write lock's line, docs/operations.md, only from what the
	// bound leaves, so none at 1). The listener's connection comes on top
	// while something waits: such a client opens it for a lock wait and
	// closes it once no lock waits, unless a queue consumer or a Listen
	// uses it. The baton command runs with 1: a process holding its locks
	// holds one connection, one that waits two. Default 0: the pools grow
	// with the calls in flight (up to 32 connections, and 16 more for
	// claims and acknowledgements on PostgreSQL), and connections left
	// idle close after a while.
	MaxConns int
	// TracerProvider makes the spans of enqueues and handler runs
	// (OpenTelemetry), for example otel.GetTracerProvider(). Default: none,
	// nothing is traced.
	TracerProvider trace.TracerProvider
}

func (o *Options) fill() error {
	if o.Prefix == "" {
		o.Prefix = "baton_"
	}
	if err := driver.CheckPrefix(o.Prefix); err != nil {
		return err
	}
	if err := o.fillTiming(); err != nil {
		return err
	}
	o.Retry.fill()
	o.fillHooks()
	o.Retention.fill()
	return nil
}

// fillTiming defaults and checks the lease, heartbeat and poll interval.
func (o *Options) fillTiming() error {
	if o.Lease == 0 {
		o.Lease = 3 * time.Second
	}
	if o.Lease < 100*time.Millisecond {
		return fmt.Errorf("baton: lease %v is shorter than 100ms", o.Lease)
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = o.Lease * 3 / 10
	}
	if o.Heartbeat >= o.Lease {
		return fmt.Errorf("baton: heartbeat %v must be shorter than the lease %v", o.Heartbeat, o.Lease)
	}
	if o.PollInterval == 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.MaxConns < 0 {
		return fmt.Errorf("%w: MaxConns %d is negative", ErrInvalid, o.MaxConns)
	}
	return nil
}

// fillHooks defaults the name, observer, tracer and logger.
func (o *Options) fillHooks() {
	if o.Name == "" {
		o.Name = strings.TrimSuffix(baseName(os.Args[0]), ".test")
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.TracerProvider == nil {
		o.TracerProvider = defaultTracerProvider()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Client is a connection to one database used as a coordination layer. It
// is safe for concurrent use; open one per process and share it.
type Client struct {
	drv  driver.Driver
	id   string
	opts Options

	leases    *lease.Keeper  // sessions: renewals, reaping
	locks     *locks.Service // the lock service
	lockWaits *wake.Locks    // this process's waiting lock requests
	// deaf drops every wake-up the listener brings (lock grants and
	// looks, queue wake-ups, cancellations): the tests' lost wake-ups.
	deaf atomic.Bool

	mu        sync.Mutex
	listeners map[*Listener]bool
	closed    bool

	// queues
	mq          *mq.Engine                        // the queue engine
	queueWaits  *wake.Queues                      // consumers waiting for messages
	running     map[int64]context.CancelCauseFunc // handlers of running messages, by message id
	notifyUsers *wake.Users                       // listeners and waiting consumers: notifications on
	// paused: the queues this process knows paused; workers start no
	// claimed message of theirs.
	paused pausedQueues

	// prepareNow is closed by the first wait: a client that waits lives
	// long enough for prepared statements to pay off at once.
	prepareNow  chan struct{}
	prepareOnce sync.Once
	tracer      trace.Tracer
	tracing     bool // a TracerProvider other than the default no-op one

	quit       chan struct{}
	upkeep     *maintain.Group
	wg         sync.WaitGroup
	lastRescue time.Time
	// queueWaited wakes the poll of waiting consumers
	// (mq.Engine.PollWaiting), idle while none waits.
	queueWaited chan struct{}
	// claimTries counts the claims of Claim calls (the tests' measure of
	// what waiting costs).
	claimTries atomic.Int64

	// the listener, started by the first waiter (see listening)
	listenMu    sync.Mutex
	stopListen  func()        // nil until the listener runs
	listenStart chan struct{} // closed when the start under way ends
	listenErr   error         // how the last start failed
	unlistened  bool          // Close stopped the listener: do not start it again
	// listenKept: a queue consumer or Listen used the listener, which then
	// runs until Close; otherwise a client with MaxConns closes it once no
	// lock waits (idleListener, told by lockIdle).
	listenKept atomic.Bool
	lockIdle   chan struct{}
}

// Backend returns the backend's short name: sqlite, postgres or mysql.
func (c *Client) Backend() string { return c.drv.Name() }

// ID returns this client's random id; sessions record it.
func (c *Client) ID() string { return c.id }

// Open connects to the database a DSN names, applies migrations (unless
// opts.NoMigrate) and starts the client's heartbeat. The wake-up listener
// (a connection of its own on PostgreSQL and MySQL) starts on the first
// wait for a lock or a message, or the first Listen.
//
//	sqlite:///var/lib/app/baton.db   sqlite:baton.db   sqlite::memory:
//	postgres://user@host:5432/db     mysql://user:pass@host:3306/db
func Open(ctx context.Context, dsn string, opts ...Options) (*Client, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	drv, err := driver.Open(ctx, dsn, o.Prefix)
	if err != nil {
		return nil, err
	}
	return start(ctx, drv, o)
}

// NewClient starts a client on a backend the program opened itself, on a
// pool it already has: postgres.OpenPool (a pgx *pgxpool.Pool) or
// postgres.OpenDB (a *sql.DB of pgx's database/sql driver). The table
// prefix is the one given to the backend; Options.Prefix is not used.
// Close ends the client and closes the backend, never the program's pool.
func NewClient(ctx context.Context, drv driver.Driver, opts ...Options) (*Client, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	if drv == nil {
		return nil, fmt.Errorf("%w: nil driver", ErrInvalid)
	}
	return start(ctx, drv, o)
}

// start migrates (unless o.NoMigrate) and starts the client on drv.
func start(ctx context.Context, drv driver.Driver, o Options) (*Client, error) {
	if l, ok := drv.(driver.Logging); ok {
		l.SetLogger(o.Logger) // what the backend logs goes where the client's does
	}
	drv.SetStatementTimeout(o.StatementTimeout)
	if !o.NoMigrate {
		if _, err := drv.Migrate(ctx); err != nil {
			drv.Close()
			return nil, fmt.Errorf("baton: migrate: %w", err)
		}
	}
	if o.MaxConns > 0 {
		drv.LimitConns(o.MaxConns)
	}
	c := &Client{
		drv: drv, id: randomID(), opts: o, listeners: map[*Listener]bool{},
		running: map[int64]context.CancelCauseFunc{}, quit: make(chan struct{}), prepareNow: make(chan struct{}), queueWaited: make(chan struct{}, 1), lockIdle: make(chan struct{}, 1),
		tracer: o.TracerProvider.Tracer(tracerName),
	}
	_, off := o.TracerProvider.(noop.TracerProvider)
	c.tracing = !off
	c.queueWaits = wake.NewQueues(func() {
		select {
		case c.queueWaited <- struct{}{}:
		default: // the poll is already told
		}
	})
	c.mq = mq.New(mq.Config{Driver: drv, Lease: o.Lease, Waits: c.queueWaits, KeepCompleted: o.Retention.Completed > 0, Log: c.logErr,
		Retention: mq.Retention(o.Retention), Tries: &c.claimTries, Rescue: c.rescue, Listening: c.listening,
		Notifying: func(on bool) {
			if on {
				c.notifyUsers.In()
			} else {
				c.notifyUsers.Out()
			}
		}})
	c.lockWaits = wake.NewLocks(func(waiting bool) {
		drv.SetWaiting(c.id, waiting)
		c.locks.Waiting(waiting) // set below, before any request can wait
		if !waiting && o.MaxConns > 0 {
			select {
			case c.lockIdle <- struct{}{}:
			default: // told already
			}
		}
	})
	c.notifyUsers = wake.NewUsers(func(on bool) { drv.SetNotifying(c.id, on) })
	c.leases = lease.NewKeeper(lease.Config{Driver: drv, ClientID: c.id, Lease: o.Lease, Heartbeat: o.Heartbeat,
		EndSession: c.endDeadSession, Ended: c.sessionEnded, SessionLost: o.Observer.SessionLost, Log: c.logErr})
	c.locks = locks.New(locks.Config{Driver: drv, ClientID: c.id, Waits: c.lockWaits, Lease: o.Lease,
		PollInterval: o.PollInterval, Listening: c.lockListening, Closed: c.isShut, Observer: o.Observer,
		Logf: c.logf, Log: c.logErr, Host: c.leases.Host(), PID: c.leases.PID(), Owner: o.Name,
		HandedOn: c.prepareSoon})
	// The listening connection starts on the first wait or Listen, and
	// statements are prepared once the client has lived a heartbeat (or
	// waits, or hands a lock on to a waiter): a one-shot command (push, a
	// lock around a short command) opens one connection and pays for
	// nothing it would not reuse. On
	// SQLite, where preparing is in-process, preparing every statement at
	// open took a 10 ms command to 15.
	c.wg.Add(1)
	go c.prepareLater()
	if o.MaxConns > 0 {
		c.wg.Add(1)
		go c.idleListener()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.locks.Run(c.quit)
	}()
	c.upkeep = c.services()
	c.upkeep.Start()
	return c, nil
}

// listening starts the driver's listener (wake-ups of lock waiters and
// queue consumers, notifications, the waiters' safety-net poll) unless it
// runs already, and returns once it runs, or when ctx ends first (the start
// then goes on for the next waiter). Every path that waits calls it before
// registering its waiter; anything that happened before the listener ran
// is caught by the wake it sends once started.
func (c *Client) listening(ctx context.Context) error {
	c.listenKept.Store(true)
	return c.lockListening(ctx)
}

// lockListening is listening for a lock waiter, whose listener a client
// with MaxConns closes again once no lock waits (idleListener).
func (c *Client) lockListening(ctx context.Context) error {
	started, err := c.kickListener()
	if started == nil {
		return err
	}
	select {
	case <-started:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	if c.stopListen != nil {
		return nil
	}
	if c.unlistened {
		return ErrClosed
	}
	return c.listenErr
}

// idleListener closes the listener of a client with MaxConns each time
// no lock waits any more, unless a queue consumer or Listen uses it: a
// process that got its locks holds its one pool connection only. A
// waiter that comes meanwhile starts it again (kickListener); one whose
// start raced with the close is woken by the poll, and its heartbeat
// starts the listener again.
func (c *Client) idleListener() {
	defer c.wg.Done()
	for {
		select {
		case <-c.quit:
			return
		case <-c.lockIdle:
		}
		c.listenMu.Lock()
		if c.stopListen != nil && !c.listenKept.Load() && !c.lockWaits.Waiting() {
			c.stopListen()
			c.stopListen = nil
		}
		c.listenMu.Unlock()
	}
}

// prepareSoon has the client's statements prepared now instead of after
// a heartbeat.
func (c *Client) prepareSoon() {
	c.prepareOnce.Do(func() { close(c.prepareNow) })
}

// kickListener starts the driver's listener unless it runs or is starting
// already, and returns the channel closed when the start ends (nil when it
// runs, or with ErrClosed after Close).
func (c *Client) kickListener() (chan struct{}, error) {
	c.prepareSoon()
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	switch {
	case c.stopListen != nil:
		return nil, nil
	case c.unlistened:
		return nil, ErrClosed
	case c.listenStart == nil:
		c.listenStart = make(chan struct{})
		c.wg.Add(1)
		go c.startListener(c.listenStart)
	}
	return c.listenStart, nil
}

// startListener starts the driver's listener on behalf of every waiter,
// within a lease per attempt, three attempts a poll interval apart (a busy
// server can take longer than a short lease to accept one connection); a
// start that still fails is tried again by the next waiter.
func (c *Client) startListener(done chan struct{}) {
	defer c.wg.Done()
	defer close(done)
	var stop func()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			c.logf("start listener: %v; trying again", err)
			select {
			case <-c.quit:
			case <-time.After(c.opts.PollInterval):
			}
		}
		if stop, err = c.listenOnce(); err == nil || isClosed(c.quit) {
			break
		}
	}
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	c.listenStart = nil
	switch {
	case err != nil:
		c.listenErr = fmt.Errorf("baton: listen: %w", err)
	case c.unlistened:
		stop() // Close came first
	default:
		c.stopListen, c.listenErr = stop, nil
		c.wake()
		c.queueWaits.WakeAll()
	}
}

// listenOnce is one attempt to start the driver's listener, within a lease
// and cancelled by Close.
func (c *Client) listenOnce() (func(), error) {
	ctx, cancel := maintain.Until(c.quit, c.opts.Lease)
	defer cancel()
	return c.drv.Listen(ctx, driver.ListenParams{ClientID: c.id, Wake: c.wakeWith, Notify: c.deliver, Interval: c.opts.PollInterval})
}

func isClosed(ch chan struct{}) bool { return maintain.Closed(ch) }

// stopListening stops the listener if it runs, for good; a start under way
// stops it when it ends.
func (c *Client) stopListening() {
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	c.unlistened = true
	if c.stopListen != nil {
		c.stopListen()
	}
}

// prepareLater prepares the backend's statements once the client has
// lived for a heartbeat; Close cancels it.
func (c *Client) prepareLater() {
	defer c.wg.Done()
	t := time.NewTimer(c.opts.Heartbeat)
	defer t.Stop()
	select {
	case <-c.quit:
		return
	case <-t.C:
	case <-c.prepareNow:
	}
	ctx, cancel := maintain.Until(c.quit, 0)
	defer cancel()
	// Unprepared statements still run (prepared on use where the backend
	// does that): a failure costs speed, not correctness.
	c.logErr("prepare statements", c.drv.Prepare(ctx))
}

// MigrationStatus describes one of baton's schema migrations.
type MigrationStatus struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// Migrate applies pending migrations and returns every migration's state.
func (c *Client) Migrate(ctx context.Context) ([]MigrationStatus, error) {
	st, err := c.drv.Migrate(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationStatus, len(st))
	for i, m := range st {
		out[i] = MigrationStatus(m)
	}
	return out, nil
}

// Close ends every session of the client (releasing their locks) and
// disconnects.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ls := make([]*Listener, 0, len(c.listeners))
	for l := range c.listeners {
		ls = append(ls, l)
	}
	c.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.logErr("flush throughput counts", c.mq.FlushThroughput(ctx))
	var errs []error
	for _, s := range c.leases.Close() {
		errs = append(errs, c.closeSession(ctx, s))
	}
	close(c.quit)
	c.upkeep.Stop()
	c.stopListening()
	c.wg.Wait()
	c.mq.Wait()
	errs = append(errs, c.drv.Close())
	return errors.Join(errs...)
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// inTx runs fn in a transaction, again when the database reports a
// transient conflict.
func (c *Client) inTx(ctx context.Context, fn func(tx driver.Tx) error) error {
	return txn.InTx(ctx, c.drv, fn)
}

// wake is called by the driver's listener; it never blocks. Grants the
// backend reported exactly are handed to their waiters at once; anything
// else makes the wake loop query.
func (c *Client) wake() { c.wakeWith(nil) }

func (c *Client) wakeWith(granted []driver.Request) {
	if c.deaf.Load() {
		return
	}
	if len(granted) > 0 && !c.lockWaits.Grant(granted) {
		return
	}
	c.locks.Wake()
}

// services are the client's background upkeep, each on its own interval
// (see internal/maintain): a slow sweep never delays a lease renewal, and
// every failure goes to Options.Logger. Loss is not decided here: each
// session's own local deadline fires on its own (see internal/lease),
// whatever a renewal is blocked on.
func (c *Client) services() *maintain.Group {
	hb, lease := c.opts.Heartbeat, c.opts.Lease
	g := &upkeepGroup{Group: maintain.NewGroup(c.opts.Logger), limited: c.opts.MaxConns > 0, hb: hb}
	// A renewal that cannot finish before the next tick is no use: the
	// next one starts afresh on another connection. It also reaps: the
	// statement that renews lists the dead sessions of others.
	g.Add(maintain.Service{Name: "lease renewal", Interval: hb, Run: c.heartbeat})
	g.Add(maintain.Service{Name: "lost-session cleanup", Interval: hb, Timeout: lease, Run: c.leases.EndAbandoned})
	g.Add(maintain.Service{Name: "claim rescuer", Interval: 5 * hb, Timeout: lease, Run: func(ctx context.Context) error {
		_, err := c.mq.RecoverStale(ctx)
		return err
	}})
	g.Add(maintain.Service{Name: "orphan sweeper", Interval: 10 * hb, Timeout: lease, Run: c.locks.SweepOrphans})
	g.Add(maintain.Service{Name: "throughput flush", Interval: 10 * hb, Timeout: lease, Run: c.mq.FlushThroughput})
	g.Add(maintain.Service{Name: "idle lock-row purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return c.inTx(ctx, func(tx driver.Tx) error { _, err := tx.LockIdentPurgeIdle(ctx); return err })
	}})
	g.Add(maintain.Service{Name: "backend upkeep", Interval: time.Minute, Timeout: lease, Run: c.drv.Maintain})
	g.Add(maintain.Service{Name: "throughput purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return c.drv.NoTx().ThroughputPurge(ctx)
	}})
	g.Add(c.mq.Scheduler().Service(c.opts.PollInterval, lease))
	g.Add(c.mq.PollService(c.opts.PollInterval, lease, c.queueWaited))
	g.Add(c.mq.PrunerService(5 * lease))
	g.Add(maintain.Service{Name: "unique-key purge", Interval: time.Minute, Timeout: lease, Run: func(ctx context.Context) error {
		return c.inTx(ctx, func(tx driver.Tx) error { _, err := tx.UniquePurge(ctx); return err })
	}})
	return g.Group
}

// upkeepGroup adds the client's services. In a client with MaxConns
// they share the pool's few connections with the lease renewal: none may
// hold one longer than a heartbeat (a statement waiting in the server
// for a row lock would otherwise keep the renewal waiting for the
// connection until the session is lost).
type upkeepGroup struct {
	*maintain.Group
	limited bool
	hb      time.Duration
}

func (g *upkeepGroup) Add(s maintain.Service) {
	if g.limited && s.Name != "lease renewal" {
		if s.Timeout <= 0 || s.Timeout > g.hb {
			s.Timeout = min(s.Interval, g.hb)
		}
	}
	g.Group.Add(s)
}

func (c *Client) logf(format string, a ...any) {
	c.opts.Logger.Warn("baton: " + fmt.Sprintf(format, a...))
}

// logErr logs err, if any, as the failure of what.
func (c *Client) logErr(what string, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		c.logf("%s: %v", what, err)
	}
}

// heartbeat renews this client's sessions and reaps dead sessions of
// others (internal/lease), and restarts the listener lock waiters need.
func (c *Client) heartbeat(ctx context.Context) error {
	if err := c.leases.Renew(ctx); err != nil {
		return err
	}
	if c.lockWaits.Waiting() {
		// Lock waiters whose listener could not start (the database was
		// away) wait on: start it again; its start wakes them. Its only
		// error is ErrClosed, when the client closes meanwhile.
		if _, err := c.kickListener(); err != nil {
			return err
		}
	}
	return nil
}

// rescueGap is how many poll intervals pass at least between two rescues
// of a client. A long-running client's lease renewal ends dead sessions
// every heartbeat and its claim rescuer runs every five; an idle worker's
// empty claims (one after each of its own renewals, on SQLite) rescued
// every time, three statements a second for nothing.
const rescueGap = 5

// rescue frees what dead sessions hold and returns stale claims to their
// queues, at most once per rescueGap poll intervals per client. Claims that
// find nothing call it, so that a process that runs only now and then (a
// cron drain) picks up a killed worker's messages without waiting for some
// long-running process to reap them. It reports whether it freed anything.
func (c *Client) rescue(ctx context.Context) bool {
	c.mu.Lock()
	if !c.lastRescue.IsZero() && time.Since(c.lastRescue) < rescueGap*c.opts.PollInterval {
		c.mu.Unlock()
		return false
	}
	c.lastRescue = time.Now()
	c.mu.Unlock()
	refs, err := c.leases.ListReapable(ctx)
	if err != nil {
		c.logErr("look for dead sessions", err)
		return false
	}
	n := c.leases.Reap(ctx, refs)
	m, err := c.mq.RecoverStale(ctx)
	c.logErr("recover stale claims", err)
	return n+m > 0
}

// closeSession ends a live session and deletes it at once, releasing what
// it holds (Session.Close, Client.Close); an ended one is left as it is.
func (c *Client) closeSession(ctx context.Context, s *lease.Session) error {
	if !s.End(ErrClosed) {
		return nil
	}
	c.releaseOwn(ctx, s)
	if s.Rows.Any() {
		// Waiting requests, or instances in request rows, may be left.
		c.locks.WithdrawSession(ctx, s.ID())
	}
	if err := c.endSession(ctx, s.ID()); err != nil {
		return fmt.Errorf("baton: close session: %w", err)
	}
	return nil
}

// releaseOwn releases, before a closing session's row goes, the
// namespaces where its own calls were granted locks (lease.Own), each by
// the release a caller's Release runs: one statement where the instances
// are fast-path holders. endSession's transaction would take each
// instance through the slow path (on MySQL/MariaDB adopted into InnoDB
// first, a commit's flush), and still catches whatever this leaves:
// an error here is only logged, and ends the releases (a database in
// trouble is not asked once per namespace before the delete).
func (c *Client) releaseOwn(ctx context.Context, s *lease.Session) {
	for _, scope := range s.Own.Scopes() {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.locks.Release(ctx, s, driver.FastReleaseParams{Kind: scope.Kind, NS: scope.NS}); err != nil {
			c.logErr("release a closing session's locks", err)
			return
		}
	}
}

// sessionEnded runs when a session of this client ends, however: its
// waiters are answered and its line for turnstiles closed.
func (c *Client) sessionEnded(id string) {
	c.lockWaits.EndSession(id)
	c.locks.SessionEnded(id)
}

// endDeadSession ends a session that a client gave up on or reaped
// (lease.Keeper's EndSession): its requests are withdrawn in the
// backend's one call first, where it has one (locks.WithdrawSession: on
// MySQL/MariaDB a reaped holder's locks had been the engine's
// transaction of about eight statements), then endSession deletes it,
// catching what is left in its transaction.
func (c *Client) endDeadSession(ctx context.Context, id string) error {
	c.locks.WithdrawSession(ctx, id)
	return c.endSession(ctx, id)
}

// endSession deletes a session and every request it has, granting what that
// frees, and gives its claimed messages back to their queues.
func (c *Client) endSession(ctx context.Context, id string) error {
	var queues []string
	err := c.inTx(ctx, func(tx driver.Tx) error {
		rs, err := tx.LockRequestListBySession(ctx, id, -1, "")
		if err != nil {
			return err
		}
		if err := c.locks.RemoveRequests(ctx, tx, rs); err != nil {
			return err
		}
		if queues, err = mq.RecoverSession(ctx, tx, id); err != nil {
			return err
		}
		return tx.SessionDelete(ctx, id)
	})
	for _, q := range queues {
		c.mq.Wake(q)
	}
	return err
}

// isShut reports whether Close has begun.
func (c *Client) isShut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
