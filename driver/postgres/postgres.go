// Package postgres is baton's PostgreSQL backend (13 and later), on pgx v5.
//
// DSN: postgres://user:pass@host:port/db?search_path=schema (any pgx
// connection parameter is accepted).
//
// Lock state lives in UNLOGGED tables, so lock operations never wait for a
// WAL flush. The uncontended acquire and the release are one statement each.
// Wake-ups use LISTEN/NOTIFY on a dedicated connection per client; NOTIFY is
// sent only from transactions that granted a waiting request or chose a
// deadlock victim, never from the uncontended path, so the global lock that
// NOTIFY takes at commit stays off the hot path. Correctness never depends on
// the listening connection: waiters also poll. Behind a transaction pooler
// without listen_dsn LISTEN cannot work: waiters poll, and notifications
// are read from a table that senders write to, in the statement of their
// NOTIFY, only while such a reader is registered.
package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/stmtbound"
)

// queries holds the named queries, one file per slice (sessions, locks,
// queue, events, notify), the same files in every backend.
//
//go:embed sql/*.sql
var queries embed.FS

//go:embed migrations/*.sql
var migrations embed.FS

// routines holds one file per stored routine, (re)created by Migrate
// whenever the file changes.
//
//go:embed sql/routines/*.sql
var routines embed.FS

// Now is PostgreSQL's clock in microseconds.
const Now = "(extract(epoch from clock_timestamp()) * 1000000)::bigint"

// Driver is the PostgreSQL backend.
type Driver struct {
	*sqlbase.DB
	cfg       *pgx.ConnConfig
	channel   string // lock wake-ups
	notifyCh  string // notifications: payload "channel payload"
	migrator  *sqlbase.Migrator
	notifying sync.Map // client id -> *atomic.Bool
	relaxed   *sqlbase.DB
	// seen holds identifiers whose lock row this driver has seen, whose
	// uncontended acquire is an update (fast_acquire_existing).
	seen sqlbase.IdentSet
	// joined holds identifiers where this driver's last reader joined
	// other readers (fast_acquire_shared granted it beside them): the next
	// reader goes there first, without the inline attempt that readers
	// beside readers always fail.
	joined sqlbase.IdentSet
	// pooled is true behind a transaction-pooling proxy (PgBouncer in
	// transaction mode): no named server-side statements, no session
	// settings, and LISTEN only through listenCfg.
	pooled bool
	// listenCfg is where LISTEN connects: the DSN's listen_dsn when it has
	// one, else the DSN itself.
	listenCfg *pgx.ConnConfig
	// listenWarn says once that wake-ups fall back to polling.
	listenWarn sync.Once
	// borrowed: the *sql.DB is the program's (OpenDB), never closed here;
	// shared: the *sql.DB made over the program's pgx pool (OpenPool).
	borrowed bool
	shared   *sql.DB
	// pollers are the clients that read notifications from the table
	// instead of LISTEN (pollOnly), by client id.
	pollers sync.Map // client id -> *poller
	// lines are the sessions' own connections for turnstiles
	// (locks.go); prefix is the tables' (their keys' too).
	lines  *sqlbase.Lines[*pgx.Conn]
	prefix string
	// bound bounds the statements of db and rdb (stmtbound); nil on the
	// program's *sql.DB (OpenDB), whose statements only their contexts
	// bound.
	bound *stmtbound.Bound
}

var _ driver.Driver = (*Driver)(nil)

func init() { driver.Register(driver.Adapt(Open), "postgres", "postgresql") }

// Open connects to the database a postgres:// DSN names.
func Open(ctx context.Context, dsn, prefix string) (*Driver, error) {
	b := stmtbound.New("postgres")
	cfg, opts, pooled, db, err := connect(ctx, dsn, b)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(idleTime)
	listenCfg := cfg
	if opts.listenDSN != "" {
		if listenCfg, err = parseConfig(opts.listenDSN); err != nil {
			db.Close()
			return nil, fmt.Errorf("bad listen_dsn: %w", err)
		}
	}
	// A second pool whose commits do not wait for the WAL flush, for claims
	// and acknowledgements: losing one in a crash only redelivers a
	// message, which at-least-once delivery allows.
	rcfg := cfg.Copy()
	if rcfg.RuntimeParams == nil {
		rcfg.RuntimeParams = map[string]string{}
	}
	if !pooled {
		// A pooler refuses settings as startup parameters (and would
		// carry them to other clients): behind one these commits wait
		// for the disk like any other.
		rcfg.RuntimeParams["synchronous_commit"] = "off"
	}
	rdb := openDB(rcfg, b)
	rdb.SetMaxOpenConns(16)
	rdb.SetMaxIdleConns(16)
	rdb.SetConnMaxIdleTime(idleTime)
	d, err := newDriver(cfg, listenCfg, pooled, db, rdb, prefix)
	if err != nil {
		db.Close()
		rdb.Close()
		return nil, err
	}
	d.bound = b
	return d, nil
}

// OpenPool opens the backend on a pgx pool the program already has. baton's
// statements run on the pool's connections; LISTEN, which needs a session
// of its own, connects with the pool's configuration (give a direct
// configuration if the pool goes through a transaction pooler: baton then
// sends every statement unnamed). Closing the client never closes the pool.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, prefix string) (*Driver, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pgx pool", driver.ErrBadDSN)
	}
	cfg := ownConfig(pool.Config().ConnConfig)
	b := stmtbound.New("postgres at " + hosts(cfg))
	db := sql.OpenDB(stmtbound.Connector(stdlib.GetPoolConnector(pool), b, false))
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres at %s:%d: %w", cfg.Host, cfg.Port, connectCause(err))
	}
	d, err := newDriver(cfg, cfg, false, db, db, prefix)
	if err != nil {
		db.Close()
		return nil, err
	}
	d.shared = db // closing it releases the pool's connections, not the pool
	d.bound = b
	return d, nil
}

// OpenDB opens the backend on a *sql.DB the program already has, opened
// with pgx's database/sql driver ("pgx", github.com/jackc/pgx/v5/stdlib).
// LISTEN connects with the configuration of the pool's connections.
// Closing the client never closes db.
func OpenDB(ctx context.Context, db *sql.DB, prefix string) (*Driver, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil *sql.DB", driver.ErrBadDSN)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", connectCause(err))
	}
	var cfg *pgx.ConnConfig
	err = c.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("%w: the *sql.DB does not use pgx's database/sql driver (github.com/jackc/pgx/v5/stdlib): open it with sql.Open(\"pgx\", ...) or give baton a DSN", driver.ErrBadDSN)
		}
		cfg = ownConfig(pc.Conn().Config())
		return nil
	})
	c.Close()
	if err != nil {
		return nil, err
	}
	d, err := newDriver(cfg, cfg, false, db, db, prefix)
	if err != nil {
		return nil, err
	}
	d.borrowed = true
	return d, nil
}

// ownConfig copies the configuration of the program's connections for
// baton's listener: without the notification handler a live connection's
// configuration carries (pgx would hand the listener's notifications to
// that other connection).
func ownConfig(c *pgx.ConnConfig) *pgx.ConnConfig {
	cfg := c.Copy()
	cfg.OnNotification = nil
	return cfg
}

// newDriver builds the driver on its pools: db for everything, rdb for
// claims and acknowledgements (db again when the program gave its own).
func newDriver(cfg, listenCfg *pgx.ConnConfig, pooled bool, db, rdb *sql.DB, prefix string) (*Driver, error) {
	q, err := sqlbase.LoadQueries(queries, "sql", prefix, map[string]string{"now": Now}, nil)
	if err != nil {
		return nil, err
	}
	migs, err := sqlbase.LoadMigrations(migrations, "migrations", prefix)
	if err != nil {
		return nil, err
	}
	rts, err := sqlbase.LoadRoutines(routines, "sql/routines", prefix)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, prefix: prefix, pooled: pooled, listenCfg: listenCfg}
	schema := d.searchSchema()
	d.channel, d.notifyCh = channelName(schema, prefix, "wake"), channelName(schema, prefix, "notify")
	d.lines = d.newLines()
	d.DB = &sqlbase.DB{SQL: db, D: &sqlbase.Dialect{
		Name:            "postgres",
		Numbered:        true,
		InsertReturning: true,
		UpdateReturning: true,
		Queries:         q,
		Wake:            d.wake,
		IsRetryable:     IsRetryable,
		Events:          events(prefix),
	}}
	d.relaxed = &sqlbase.DB{SQL: rdb, D: d.DB.D}
	d.DB.NoPrepare, d.relaxed.NoPrepare = pooled, pooled
	d.migrator = &sqlbase.Migrator{
		DB: db, Prefix: prefix, Migrations: migs, Routines: rts, Now: Now, Numbered: true,
		// DDL is transactional: migrate inside one transaction that holds
		// an advisory lock, so concurrent migrators queue.
		Locked: sqlbase.LockedInTx(db, driver.Statement{Query: "BEGIN"},
			driver.Statement{Query: "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.' || $1))", Args: []any{prefix + "migrate"}}),
	}
	return d, nil
}

// channelName is one of baton's NOTIFY channels (wake, notify) for the
// prefix, qualified by the schema of the DSN's search_path: channels are
// the database's, so installations in two schemas of one database would
// otherwise hear each other's wake-ups and job events. A name past
// PostgreSQL's 63 bytes is the prefix's name and a hash of the whole.
func channelName(schema, prefix, name string) string {
	ch := prefix + name
	if schema != "" {
		ch = schema + "." + ch
	}
	if len(ch) > 63 {
		h := sha256.Sum256([]byte(ch))
		ch = (prefix + name)[:min(len(prefix+name), 46)] + "." + hex.EncodeToString(h[:8])
	}
	return ch
}

// IsRetryable reports deadlocks and serialization failures.
func IsRetryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40P01" || pe.Code == "40001"
	}
	return false
}

// Migrate implements driver.Driver. When the schema search_path names
// does not exist, the error names it and the fix.
func (d *Driver) Migrate(ctx context.Context) ([]driver.MigrationStatus, error) {
	st, err := d.migrator.Up(ctx)
	if err != nil {
		if denied := d.schemaDenied(ctx); denied != nil {
			return nil, denied
		}
		if schema, missing := d.missingSchema(ctx); missing {
			return nil, fmt.Errorf("%w: %q (search_path in the DSN): run `baton migrate`, which creates it, or CREATE SCHEMA %s", driver.ErrNoSchema, schema, pgx.Identifier{schema}.Sanitize())
		}
	}
	return st, err
}

// searchSchema is the first schema of the DSN's search_path, where baton
// creates its tables ("" when the DSN sets none).
func (d *Driver) searchSchema() string {
	first, _, _ := strings.Cut(d.cfg.RuntimeParams["search_path"], ",")
	first = strings.TrimSpace(first)
	if len(first) >= 2 && first[0] == '"' && first[len(first)-1] == '"' {
		return strings.ReplaceAll(first[1:len(first)-1], `""`, `"`)
	}
	if first == "$user" {
		return ""
	}
	return strings.ToLower(first)
}

// missingSchema reports the search_path schema when it does not exist.
func (d *Driver) missingSchema(ctx context.Context) (string, bool) {
	schema := d.searchSchema()
	if schema == "" {
		return "", false
	}
	var exists bool
	err := d.SQL.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
	return schema, err == nil && !exists
}

// CreateSchema creates the schema the DSN's search_path names when it
// does not exist, and returns its name when it did so ("" otherwise);
// Uninstall removes it.
// `baton migrate` calls it before migrating.
func (d *Driver) CreateSchema(ctx context.Context) (string, error) {
	schema, missing := d.missingSchema(ctx)
	if !missing {
		return "", nil
	}
	if _, err := d.SQL.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("create schema %q (search_path in the DSN): %w", schema, err)
	}
	// The comment tells Uninstall that the schema is baton's to remove.
	if _, err := d.SQL.ExecContext(ctx, "COMMENT ON SCHEMA "+pgx.Identifier{schema}.Sanitize()+" IS "+lit(schemaMarker)); err != nil {
		return "", fmt.Errorf("mark schema %q as baton's: %w", schema, err)
	}
	return schema, nil
}

// MigrationStatus implements driver.Driver. Nothing applied, in a
// search_path schema the user may not use, is that privilege missing: the
// server hides the tables of such a schema.
func (d *Driver) MigrationStatus(ctx context.Context) ([]driver.MigrationStatus, error) {
	st, err := d.migrator.Status(ctx)
	if err == nil && len(st) > 0 && !st[0].Applied {
		err = d.schemaDenied(ctx)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// schemaDenied is a permission error when the search_path schema exists
// and the user lacks USAGE on it (nil when that cannot be read).
func (d *Driver) schemaDenied(ctx context.Context) error {
	schema := d.searchSchema()
	if schema == "" {
		return nil
	}
	var denied bool
	err := d.SQL.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1 AND NOT has_schema_privilege(oid, 'USAGE'))`, schema).Scan(&denied)
	if err != nil || !denied {
		return nil
	}
	return fmt.Errorf("permission denied for schema %s (search_path in the DSN): the user needs USAGE on it", pgx.Identifier{schema}.Sanitize())
}

// Relaxed implements driver.Driver on the pool without synchronous commit.
func (d *Driver) Relaxed() driver.Tx { return d.relaxed.NoTx() }

// Prepare implements driver.Driver for both pools.
func (d *Driver) Prepare(ctx context.Context) error {
	if err := d.DB.Prepare(ctx); err != nil || d.relaxed == d.DB {
		return err
	}
	return d.relaxed.Prepare(ctx)
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	d.lines.CloseAll()
	switch {
	case d.borrowed:
		return nil // the program's *sql.DB
	case d.shared != nil:
		return d.shared.Close() // the program's pgx pool stays open
	}
	if d.relaxed == d.DB {
		return d.DB.Close()
	}
	return errors.Join(d.relaxed.SQL.Close(), d.DB.Close())
}

// SetStatementTimeout implements driver.Driver.
func (d *Driver) SetStatementTimeout(t time.Duration) {
	if d.bound != nil {
		d.bound.Set(t)
	}
}

// Embedded implements driver.Driver: the statements run in the server:
// the engine runs those that change the lock state to their end.
func (d *Driver) Embedded() bool { return false }

// idleTime is how long a pool connection stays open unused: the pools
// grow with the calls in flight and shrink back once a burst is over.
const idleTime = 30 * time.Second

// tooManyClients reports a connection the server refused for lack of
// slots: SQLSTATE 53300 (too_many_connections: "sorry, too many clients
// already", or the slots left are reserved).
func tooManyClients(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53300"
}

// openDB opens a pool on cfg whose new connections wait for a slot while
// the server has none (sqlbase.RetryFull), and whose statements b
// bounds (stmtbound; nil: only their contexts do).
func openDB(cfg *pgx.ConnConfig, b *stmtbound.Bound) *sql.DB {
	c := sqlbase.RetryFull(stdlib.GetConnector(*cfg), tooManyClients)
	if b != nil {
		c = stmtbound.Connector(c, b, false)
	}
	return sql.OpenDB(c)
}

// connectDirect opens a connection outside the pools (the listener, a
// line), waiting for a slot as openDB's do.
func connectDirect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	return sqlbase.WhileFull(ctx, tooManyClients, func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg)
	})
}

// LimitConns implements driver.Driver: the pool holds at most n
// connections (at most n idle), claims and acknowledgements share it
// (their commits then wait for the WAL flush as any other), and lines
// take what the bound leaves (none at 1: a contended waiter waits
// through the tables, woken by the listener). Called before the client
// runs any statement but its schema check.
func (d *Driver) LimitConns(n int) {
	if n <= 0 || d.borrowed || d.shared != nil {
		return // the program's pool is the program's to size
	}
	d.DB.SQL.SetMaxOpenConns(n)
	d.DB.SQL.SetMaxIdleConns(n)
	if d.relaxed.SQL != d.DB.SQL {
		d.relaxed.SQL.Close()
		d.relaxed = d.DB
	}
	d.lines.Max = int32(min(n-1, maxLines))
}

// errNotPgx: a pool connection is not pgx's (cannot happen with the pools
// this driver opens or accepts; checked all the same).
var errNotPgx = errors.New("postgres: a pool connection is not a pgx connection")

// direct runs a named query on one of the pool's connections through pgx
// itself and hands its rows to scan, which must read them all. The lock
// fast path goes this way: database/sql starts a goroutine for every query
// made with a cancellable context (to close its rows when the context
// ends), and that hand-off between threads is a measurable part of a
// statement that takes a tenth of a millisecond. pgx watches the context
// itself without one. The statement is prepared once per connection by
// pgx's statement cache (described only, behind a transaction pooler: the
// connection's own QueryExecMode decides).
func (d *Driver) direct(ctx context.Context, name string, args []any, scan func(pgx.Rows) error) error {
	c, err := d.DB.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	// pgx itself runs the statement: bounded here as the pool's are.
	bctx, cancel := d.bound.Context(ctx)
	defer cancel()
	return d.bound.Err(ctx, bctx, c.Raw(func(dc any) error {
		pc, ok := stmtbound.Unwrap(dc).(*stdlib.Conn)
		if !ok {
			return errNotPgx
		}
		rows, err := pc.Conn().Query(bctx, d.DB.Q(name), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}))
}
