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

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/events"
	"github.com/batonhq/baton/internal/jobevents"
	"github.com/batonhq/baton/internal/locks"
	"github.com/batonhq/baton/internal/maintain"
	"github.com/batonhq/baton/internal/notify"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sessions"
	"github.com/batonhq/baton/internal/tracing"
	"github.com/batonhq/baton/internal/worker"
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
	// Retry is the wait between a message's attempts (default: attempt⁴
	// seconds ±20%, about 20 days over DefaultMaxAttempts; see
	// RetryPolicy). A kind may have its own (KindOptions.Retry).
	Retry RetryPolicy
	// Workers are this program's workers, whose kinds (and aliases) are
	// the kinds it knows: an enqueue of another kind is refused with
	// ErrUnknownKind unless its EnqueueOptions.AllowUnknownKind is set
	// (a kind that another program works). Default nil: baton cannot
	// know the kinds, and every kind is enqueued. Workers added later
	// count.
	Workers *Workers
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
	// uses it. On MySQL/MariaDB the connection that wakes other
	// processes (KILL QUERY) comes on top too while it wakes them, and
	// closes after a few idle seconds. The baton command runs with 1: a
	// process holding its locks holds one connection, one that waits
	// two. Default 0: the pools grow
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
		o.TracerProvider = tracing.DefaultProvider()
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

	leases    *sessions.Keeper // sessions: renewals, reaping
	owner     *sessions.Owner  // sessions: ending them, freeing what they hold
	locks     *locks.Service   // the lock service
	lockWaits *bus.Locks       // this process's waiting lock requests
	// bus is the listener (started by the first waiter) and the router
	// of what it brings: lock grants, queue wake-ups, cancellations,
	// pauses, notifications.
	bus    *bus.Listener
	notify *notify.Service[Notification] // Notify, Listen
	events *events.Service               // subscriptions
	jobs   *jobHub                       // job events: SubscribeJobs, and this process's events

	mu     sync.Mutex
	closed bool

	// queues
	mq          *mq.Engine  // the queue engine
	queueWaits  *bus.Queues // consumers waiting for messages
	notifyUsers *bus.Users  // listeners and waiting consumers: notifications on
	// workers: the handlers of running messages and the queues this
	// process knows paused (workers start no claimed message of theirs).
	workers *worker.Registry

	// prepareNow is closed by the first wait: a client that waits lives
	// long enough for prepared statements to pay off at once.
	prepareNow  chan struct{}
	prepareOnce sync.Once
	spans       tracing.Spans // enqueues' and handler runs' spans
	log         maintain.Log  // background failures, to Options.Logger

	quit    chan struct{}
	upkeep  *maintain.Group
	rescuer *maintain.Rescuer // empty claims' rescues
	wg      sync.WaitGroup
	// queueWaited wakes the poll of waiting consumers
	// (mq.Engine.PollWaiting), idle while none waits.
	queueWaited chan struct{}
	// claimTries counts the claims of Claim calls (the tests' measure of
	// what waiting costs).
	claimTries atomic.Int64
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
	if err := setUp(ctx, drv, o); err != nil {
		return nil, err
	}
	c := &Client{
		drv: drv, id: randomID(), opts: o,
		quit: make(chan struct{}), prepareNow: make(chan struct{}), queueWaited: make(chan struct{}, 1),
		spans: tracing.New(o.TracerProvider), log: maintain.Log{L: o.Logger},
	}
	c.wire()
	c.run()
	return c, nil
}

// setUp gives drv the client's logger and bounds and migrates it (unless
// o.NoMigrate); drv is closed when that fails.
func setUp(ctx context.Context, drv driver.Driver, o Options) error {
	drv.SetLogger(o.Logger) // what the backend logs goes where the client's does
	drv.SetStatementTimeout(o.StatementTimeout)
	if !o.NoMigrate {
		if _, err := drv.Migrate(ctx); err != nil {
			drv.Close()
			return fmt.Errorf("baton: migrate: %w", err)
		}
	}
	if o.MaxConns > 0 {
		drv.LimitConns(o.MaxConns)
	}
	return nil
}

// wire makes the client's services, each given what it calls of the
// others.
func (c *Client) wire() {
	drv, o := c.drv, c.opts
	c.queueWaits = bus.NewQueues(bus.Nudge(c.queueWaited)) // wakes the poll of waiting consumers
	c.mq = mq.New(mq.Config{Driver: drv, Lease: o.Lease, Waits: c.queueWaits, KeepCompleted: o.Retention.Completed > 0, Log: c.log.Err,
		Retention: mq.Retention(o.Retention), Tries: &c.claimTries,
		JobEvents: func(evs []jobevents.Event) { c.jobs.sent(evs) }, Subscribed: func() bool { return c.jobs.presence.On() }, // c.jobs is set below
		Rescue:    func(ctx context.Context) bool { return c.rescuer.Rescue(ctx) }, // c.rescuer is set below
		Listening: func(ctx context.Context) error { return c.bus.Listening(ctx) }, // c.bus too
		Notifying: func(on bool) { c.notifyUsers.Count(on) }})                      // c.notifyUsers too
	c.workers = newRegistry(c) // after c.mq, whose reads it makes
	c.lockWaits = bus.NewLocks(func(waiting bool) {
		drv.Notifier().SetWaiting(c.id, waiting)
		c.locks.Waiting(waiting) // set below, before any request can wait
		if !waiting {
			c.bus.LocksIdle()
		}
	})
	c.notifyUsers = bus.NewUsers(func(on bool) { drv.Notifier().SetNotifying(c.id, on) })
	c.notify = notify.New(drv, newNotification)
	c.jobs = newJobHub(c)
	c.events = events.New(events.Config{Driver: drv, Register: c.mq.Register, Log: c.log.Err})
	// prepareSoon has the statements prepared now instead of after a
	// heartbeat.
	prepareSoon := func() { c.prepareOnce.Do(func() { close(c.prepareNow) }) }
	c.leases = sessions.NewKeeper(sessions.Config{Driver: drv, ClientID: c.id, Lease: o.Lease, Heartbeat: o.Heartbeat,
		EndSession:  func(ctx context.Context, id string) error { return c.owner.EndDead(ctx, id) },
		Ended:       func(id string) { c.lockWaits.EndSession(id); c.locks.SessionEnded(id) }, // its waiters answered, its turnstile line closed
		SessionLost: o.Observer.SessionLost, Log: c.log.Err})
	c.locks = locks.New(locks.Config{Driver: drv, ClientID: c.id, Waits: c.lockWaits, Lease: o.Lease,
		PollInterval: o.PollInterval, Observer: o.Observer,
		Listening: func(ctx context.Context) error { return c.bus.LockListening(ctx) }, // c.bus is set below
		Logf:      c.log.Warnf, Log: c.log.Err, Host: c.leases.Host(), PID: c.leases.PID(), Owner: o.Name,
		HandedOn: prepareSoon, Closed: func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.closed
		}})
	c.bus = bus.New(bus.Config{Notifier: drv.Notifier(), ClientID: c.id, Lease: o.Lease, PollInterval: o.PollInterval,
		Quit: c.quit, CloseIdle: o.MaxConns > 0, Kicked: prepareSoon, Logf: c.log.Warnf,
		Routes: bus.Routes{Locks: c.lockWaits, Look: c.locks.Wake, Queues: c.queueWaits,
			Cancel: c.workers.OnCancel, Pause: c.workers.OnPause, Notify: c.notify.Deliver,
			Jobs: c.jobs.deliver, Subscribers: c.jobs.heard}})
	c.owner = sessions.NewOwner(sessions.OwnerConfig{Driver: drv, Release: c.locks.CloseSession, Withdraw: c.locks.WithdrawSession,
		DropLocks: c.locks.DropSession, ReturnClaims: c.mq.RecoverSession})
	c.rescuer = maintain.NewRescuer(maintain.RescuerConfig{PollInterval: o.PollInterval, ListReapable: c.leases.ListReapable,
		Reap: c.leases.Reap, RecoverStale: c.mq.RecoverStale, Log: c.log.Err})
}

// run starts the client's background work.
func (c *Client) run() {
	drv, o := c.drv, c.opts
	// The listening connection starts on the first wait or Listen, and
	// statements are prepared once the client has lived a heartbeat (or
	// waits, or hands a lock on to a waiter): a one-shot command (push, a
	// lock around a short command) opens one connection and pays for
	// nothing it would not reuse. On
	// SQLite, where preparing is in-process, preparing every statement at
	// open took a 10 ms command to 15.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		maintain.After(c.quit, c.prepareNow, o.Heartbeat, func(ctx context.Context) {
			// Unprepared statements still run (prepared on use where the
			// backend does that): a failure costs speed, not correctness.
			c.log.Err("prepare statements", drv.Prepare(ctx))
		})
	}()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.locks.Run(c.quit)
	}()
	c.upkeep = maintain.Upkeep(maintain.Config{Driver: drv, Logger: o.Logger, Heartbeat: o.Heartbeat, Lease: o.Lease,
		PollInterval: o.PollInterval, Limited: o.MaxConns > 0,
		Renew: c.leases.Renew, Renewed: func() error {
			if !c.lockWaits.Waiting() {
				return nil
			}
			// Lock waiters whose listener could not start (the database
			// was away) wait on: start it again; its start wakes them.
			// Its only error is ErrClosed, when the client closes
			// meanwhile.
			return c.bus.Kick()
		},
		EndAbandoned: c.leases.EndAbandoned, SweepOrphans: c.locks.SweepOrphans, RecoverStale: c.mq.RecoverStale,
		FlushThroughput: c.mq.FlushThroughput,
		Services: []maintain.Service{c.mq.Scheduler().Service(o.PollInterval, o.Lease),
			c.mq.PollService(o.PollInterval, o.Lease, c.queueWaited), c.mq.PrunerService(5 * o.Lease),
			c.mq.DepsService(5*o.PollInterval, o.Lease), c.mq.BacklogService(5 * o.Lease)}})
	c.upkeep.Start()
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
	c.mu.Unlock()
	c.notify.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.jobs.close(ctx)
	c.log.Err("flush throughput counts", c.mq.FlushThroughput(ctx))
	var errs []error
	for _, s := range c.leases.Close() {
		errs = append(errs, c.owner.Close(ctx, s))
	}
	close(c.quit)
	c.upkeep.Stop()
	c.bus.Close()
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
