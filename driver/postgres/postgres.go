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
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/maintain"
	"github.com/batonhq/baton/internal/stmtbound"
)

//go:embed queries.sql
var queriesSQL string

//go:embed postgres.sql
var ownSQL string

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
	// (turnstile.go); prefix is the tables' (their keys' too).
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
	q, err := sqlbase.ParseQueryFiles(prefix, map[string]string{"now": Now}, queriesSQL, ownSQL)
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
	d := &Driver{cfg: cfg, prefix: prefix, channel: prefix + "wake", notifyCh: prefix + "notify", pooled: pooled, listenCfg: listenCfg}
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

// LockFastAcquire implements driver.Driver: one statement on a free lock
// (the instance is the lock row's inline holder), a second one for a
// reader beside other readers (a request row). A writer refused by the
// first needs the slow path: the second would refuse it too.
func (d *Driver) LockFastAcquire(ctx context.Context, p driver.FastAcquireParams) (driver.Request, bool, error) {
	nr, nw := sqlbase.ModeCounts(p.Mode)
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode,
		Status: driver.StatusGranted, CallID: p.CallID, Inline: true}
	// The mode as a plain string: pgx encodes a named string type by
	// reflection, on every call.
	args := []any{p.Kind, []byte(p.NS), []byte(p.Name), nr, nw, p.SessionID, p.ClientID, string(p.Mode), p.CallID}
	var inc *int64
	found := false
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&r.ID, &r.Token, &inc); err != nil {
				return err
			}
		}
		return nil
	}
	if p.Mode == driver.ModeRead && d.joined.Has(p.Ident) {
		return d.joinReaders(ctx, r, p, args)
	}
	seen := d.seen.Has(p.Ident)
	if seen {
		if err := d.direct(ctx, "fast_acquire_existing", args, scan); err != nil {
			return driver.Request{}, false, fmt.Errorf("fast_acquire_existing: %w", err)
		}
		if found && inc == nil && p.Incarnation != 0 {
			// The row's incarnation is not set yet (ident_incarnation);
			// no row: a crash emptied the lock state, and inc stays nil.
			err := d.RowNamed(ctx, nil, "ident_incarnation", args[:3]...).Scan(&inc)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				// Granted, unchecked: the engine withdraws the call, as
				// after any statement that may have written.
				return driver.Request{}, false, fmt.Errorf("ident_incarnation: %w", err)
			}
		}
	}
	if !found && !(seen && p.Mode == driver.ModeRead) {
		// Not seen, or a writer refused: the lock is taken, or the row is
		// gone (the upkeep deleted it), which only the upsert tells
		// apart. Refused there too, the lock is taken, and the engine's
		// contention hint keeps its next calls off the fast path. (A
		// reader goes on to fast_acquire_shared, an upsert as well.)
		if err := d.direct(ctx, "fast_acquire", args, scan); err != nil {
			return driver.Request{}, false, fmt.Errorf("fast_acquire: %w", err)
		}
		d.seen.Add(p.Ident)
	}
	if !found && p.Mode == driver.ModeRead {
		return d.joinReaders(ctx, r, p, args)
	}
	return outcome(r, found, p.Incarnation, inc)
}

// outcome is LockFastAcquire's answer once its statements ran: refused
// unless one granted r (found), and ErrServerRestarted for a grant from
// lock state that a crash emptied after the session began (its
// incarnation want; inc the grant's), which the caller gives up with
// the session.
func outcome(r driver.Request, found bool, want int64, inc *int64) (driver.Request, bool, error) {
	switch {
	case !found:
		return driver.Request{}, false, nil
	case stale(want, inc):
		return r, false, driver.ErrServerRestarted
	}
	return r, true, nil
}

// joinReaders is LockFastAcquire for a reader beside other readers
// (fast_acquire_shared): r granted as a request row, or refused. The
// identifier is marked joined while the readers it joins are others, so
// that the next reader of this driver comes here first; a reader that
// found itself alone, or was refused, unmarks it.
func (d *Driver) joinReaders(ctx context.Context, r driver.Request, p driver.FastAcquireParams, args []any) (driver.Request, bool, error) {
	var inc *int64
	var readers int64
	found := false
	err := d.direct(ctx, "fast_acquire_shared", args, func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&r.ID, &r.Token, &inc, &readers); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return driver.Request{}, false, fmt.Errorf("fast_acquire_shared: %w", err)
	}
	if found && readers > 1 {
		d.joined.Add(p.Ident)
	} else {
		d.joined.Remove(p.Ident)
	}
	r.Inline = false
	return outcome(r, found, p.Incarnation, inc)
}

// stale reports whether a grant came from lock state of another
// incarnation (inc, nil when the lock state has none) than the session's
// (want, 0 when the engine does not check).
func stale(want int64, inc *int64) bool {
	return want != 0 && (inc == nil || *inc != want)
}

// LockFastAcquireMany implements driver.Locks, in one statement
// when every name is free: fast_acquire_many_existing when the driver has
// seen every name's row, else fast_acquire_many_free (also after the
// former found a row missing or lost a race); {p}fast_acquire_many for
// readers refused there, which may join other readers.
func (d *Driver) LockFastAcquireMany(ctx context.Context, p driver.FastAcquireParams, names []string) ([]driver.Request, bool, error) {
	nr, nw := sqlbase.ModeCounts(p.Mode)
	bnames := make([][]byte, len(names))
	for i, n := range names {
		bnames[i] = []byte(n)
	}
	var byName map[string]driver.Request
	var restarted bool
	args := []any{p.Kind, []byte(p.NS), bnames, nr, nw, p.SessionID, p.ClientID, string(p.Mode), p.CallID}
	scan := func(rows pgx.Rows) (err error) {
		byName, restarted, err = scanGrants(rows, p, len(names))
		return err
	}
	seen := d.seen.HasAll(p.Kind, p.NS, names)
	if seen {
		if err := d.direct(ctx, "fast_acquire_many_existing", args, scan); err != nil {
			return nil, false, fmt.Errorf("fast_acquire_many_existing: %w", err)
		}
		if len(byName) > 0 && len(byName) < len(names) {
			// A row is missing, or a name was taken meanwhile: the
			// upsert below tells which.
			if err := d.undoMany(ctx, p, byName); err != nil {
				return nil, false, err
			}
			byName = nil
		}
	}
	if len(byName) == 0 && !(seen && p.Mode == driver.ModeRead) {
		// Not seen, or writers refused (a reader refused goes on to the
		// function below, which makes missing rows as well).
		if err := d.direct(ctx, "fast_acquire_many_free", args, scan); err != nil {
			return nil, false, fmt.Errorf("fast_acquire_many_free: %w", err)
		}
		d.seen.AddAll(p.Kind, p.NS, names)
	}
	switch {
	case len(byName) > 0 && len(byName) < len(names):
		return nil, false, d.undoMany(ctx, p, byName)
	case len(byName) == 0 && p.Mode == driver.ModeRead:
		// {p}fast_acquire_many's second way: readers beside readers. (A
		// writer it would refuse as the statement before did.)
		if err := d.direct(ctx, "fast_acquire_many", args, scan); err != nil {
			return nil, false, fmt.Errorf("fast_acquire_many: %w", err)
		}
	}
	if len(byName) == 0 {
		return nil, false, nil
	}
	out := make([]driver.Request, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	if restarted {
		return out, false, driver.ErrServerRestarted
	}
	return out, true, nil
}

// undoMany releases the inline holders a many-name statement granted
// when it could not grant every name (another call took one between its
// read and its write, or a row was missing); those it cannot release are
// the engine's to remove (driver.ErrPartialGrant).
func (d *Driver) undoMany(ctx context.Context, p driver.FastAcquireParams, granted map[string]driver.Request) error {
	for name := range granted {
		if _, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: p.SessionID, Kind: p.Kind, NS: p.NS,
			Name: name, InlineOnly: true}); err != nil {
			return errors.Join(driver.ErrPartialGrant, err)
		}
	}
	return nil
}

// scanGrants reads fast_acquire_many's rows, the granted requests by
// name; restarted is set when a grant came from lock state of another
// incarnation than the session's.
func scanGrants(rows pgx.Rows, p driver.FastAcquireParams, n int) (map[string]driver.Request, bool, error) {
	byName := make(map[string]driver.Request, n)
	restarted := false
	for rows.Next() {
		var name []byte
		var inc *int64
		r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Mode: p.Mode, Status: driver.StatusGranted, CallID: p.CallID}
		if err := rows.Scan(&name, &r.ID, &r.Token, &inc, &r.Inline); err != nil {
			return nil, false, err
		}
		r.Ident = driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)}
		byName[r.Name] = r
		restarted = restarted || stale(p.Incarnation, inc)
	}
	return byName, restarted, nil
}

// LockRequest implements driver.Locks with the {p}request function:
// one round trip instead of a transaction of seven.
func (d *Driver) LockRequest(ctx context.Context, p driver.RequestParams) (driver.Request, error) {
	r := driver.Request{SessionID: p.SessionID, ClientID: p.ClientID, Ident: p.Ident, Mode: p.Mode, CallID: p.CallID}
	var status string // plain: database/sql converts into it without reflection
	err := d.RowNamed(ctx, nil, "request", p.Kind, []byte(p.NS), []byte(p.Name), p.SessionID, p.ClientID, string(p.Mode), p.CallID, p.TryOnce).
		Scan(&r.ID, &status, &r.Token)
	r.Status = driver.RequestStatus(status)
	switch {
	case err != nil:
		return driver.Request{}, fmt.Errorf("request: %w", err)
	case r.Status == "X":
		return driver.Request{}, driver.ErrNoSession
	case r.Status == "W":
		return driver.Request{}, driver.ErrWouldWait
	}
	return r, nil
}

// Incarnation implements driver.Sessions: crash recovery empties the
// UNLOGGED lock tables while holders of the lost state may still count
// themselves holders until their leases run out.
func (d *Driver) Incarnation(ctx context.Context, lease time.Duration) (int64, time.Duration, error) {
	var id, waitUS int64
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		// No row: another session wrote the new incarnation after this
		// statement's snapshot; the next one sees it.
		if err = d.RowNamed(ctx, nil, "incarnation", lease.Microseconds()).Scan(&id, &waitUS); !errors.Is(err, sql.ErrNoRows) {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("incarnation: %w", err)
	}
	return id, time.Duration(waitUS) * time.Microsecond, nil
}

// LockFastRelease implements driver.Driver in one statement, hand-off to
// waiters included, so it never reports identifiers to re-examine. A
// session with request rows releases through {p}release_name, a namespace's names in name order (release_ns); one holding only
// inline holders by one update of them (release_inline).
func (d *Driver) LockFastRelease(ctx context.Context, p driver.FastReleaseParams) (int, []driver.Ident, error) {
	var name, limit any
	if p.Name != "" {
		name = []byte(p.Name)
	}
	if p.Limit > 0 {
		limit = p.Limit
	}
	var query string
	var args []any
	switch {
	case p.InlineOnly && p.Name != "":
		query, args = "release_inline_name", []any{p.SessionID, p.Kind, []byte(p.NS), name, d.channel}
	case p.InlineOnly:
		query, args = "release_inline", []any{p.SessionID, p.Kind, []byte(p.NS), d.channel}
	case p.Name != "":
		query, args = "release_name", []any{p.SessionID, p.Kind, []byte(p.NS), name, limit, d.channel}
	case p.Limit == 0:
		query, args = "release_ns", []any{p.SessionID, p.Kind, []byte(p.NS), d.channel}
	default:
		return 0, nil, errors.New("postgres: a release with a limit names its lock (FastReleaseParams.Limit)")
	}
	var n int
	var grants []string
	var contended [][]byte
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			var g string
			if err := rows.Scan(&n, &g, &contended); err != nil {
				return err
			}
			grants = append(grants, g)
		}
		return nil
	}
	if p.InlineOnly {
		// A row per name released (release_inline).
		scan = func(rows pgx.Rows) error {
			for rows.Next() {
				var name []byte
				var waiters int
				var g *string
				if err := rows.Scan(&name, &waiters, &g); err != nil {
					return err
				}
				n++
				if waiters > 0 {
					contended = append(contended, name)
				}
				if g != nil {
					grants = append(grants, *g)
				}
			}
			return nil
		}
	}
	if p.RowsOn != "" && !p.InlineOnly && p.Limit == 0 && !d.lines.Holds(p.SessionID, driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}) {
		// A session with turnstiles in scope releases on its line below.
		if n, done, err := d.releaseRows(ctx, p); done || err != nil {
			return n, nil, err
		}
	}
	done, err := d.releaseOnLine(ctx, p, query, args, scan)
	if !done || err != nil {
		// No turnstile to let go, or the line failed (closed now, which
		// let them go): the release through the pool, which releases
		// what the failed one may not have.
		n, grants, contended = 0, nil, nil
		err = d.direct(ctx, query, args, scan)
	}
	if err != nil {
		return 0, nil, err
	}
	handLocal(grants)
	if p.Contended != nil {
		for _, name := range contended {
			p.Contended(driver.Ident{Kind: p.Kind, NS: p.NS, Name: string(name)})
		}
	}
	return n, nil, nil
}

// releaseRows is LockFastRelease by release_rows: the session's request
// rows on p.RowsOn in one statement. done false when it released nothing
// or the session has an inline holder in the namespace: the caller's
// statement then does the release.
func (d *Driver) releaseRows(ctx context.Context, p driver.FastReleaseParams) (n int, done bool, err error) {
	var np int64
	var grants *string
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			done = true
			if err := rows.Scan(&n, &np, &grants); err != nil {
				return err
			}
		}
		return nil
	}
	args := []any{p.SessionID, p.Kind, []byte(p.NS), []byte(p.RowsOn), d.channel}
	if err := d.direct(ctx, "release_rows", args, scan); err != nil || !done {
		return 0, false, err
	}
	if grants != nil {
		handLocal([]string{*grants})
	}
	if np > 0 && p.Contended != nil {
		p.Contended(driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.RowsOn})
	}
	return n, true, nil
}

// LockRegrant implements driver.Driver with the {p}regrant_grants
// function: one statement per identifier, its grants handed to clients in
// this process at once.
func (d *Driver) LockRegrant(ctx context.Context, ids []driver.Ident) (bool, error) {
	for _, id := range ids {
		var grants string
		if err := d.RowNamed(ctx, nil, "regrant", id.Kind, []byte(id.NS), []byte(id.Name), d.channel).Scan(&grants); err != nil {
			return true, err
		}
		handLocal([]string{grants})
	}
	return true, nil
}

// LockRequestsRemove implements driver.Locks with one call of
// {p}remove_requests (the identifiers' rows locked in
// order, the requests deleted, each identifier handed on by
// {p}regrant_grants, which sees transactions' gates itself), its grants
// handed to clients in this process at once.
func (d *Driver) LockRequestsRemove(ctx context.Context, rs []driver.Request) (bool, error) {
	ids := make([]int64, len(rs))
	var idents []driver.Ident
	for i, r := range rs {
		ids[i] = r.ID
		idents = append(idents, r.Ident)
	}
	slices.SortFunc(idents, driver.Ident.Compare)
	idents = slices.Compact(idents)
	kinds := make([]int16, len(idents))
	nss, names := make([][]byte, len(idents)), make([][]byte, len(idents))
	for i, id := range idents {
		kinds[i], nss[i], names[i] = int16(id.Kind), []byte(id.NS), []byte(id.Name)
	}
	var grants string
	if err := d.RowNamed(ctx, nil, "remove_call", ids, kinds, nss, names, d.channel).Scan(&grants); err != nil {
		return false, err
	}
	handLocal([]string{grants})
	return true, nil
}

// LockCallWithdraw implements driver.Locks with one call of
// {p}withdraw_call, or with settle of {p}settle_call
// (the rows locked first), its grants handed to clients
// in this process at once.
func (d *Driver) LockCallWithdraw(ctx context.Context, sessionID string, callID int64, ids []driver.Ident, settle bool) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	names := make([][]byte, len(ids))
	for i, id := range ids {
		names[i] = []byte(id.Name)
	}
	var grants string
	query := "withdraw_call"
	if settle {
		query = "settle_call"
	}
	if err := d.RowNamed(ctx, nil, query, sessionID, callID, ids[0].Kind, []byte(ids[0].NS), names, d.channel).Scan(&grants); err != nil {
		return false, err
	}
	handLocal([]string{grants})
	return true, nil
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

// SessionHeartbeat implements driver.Driver in one statement.
func (d *Driver) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	if len(p.SessionIDs) == 0 {
		return d.DB.SessionHeartbeat(ctx, p)
	}
	q := sqlbase.ExpandList(d.Q("session_heartbeat"), true, 5, len(p.SessionIDs))
	args := append([]any{p.Lease.Microseconds(), p.ClientID, p.HostID, p.Limit}, sqlbase.StringArgs(p.SessionIDs)...)
	rows, err := d.SQL.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, nil, err
	}
	return scanHeartbeat(rows)
}

// scanHeartbeat reads session_heartbeat's rows, and closes them: each has
// the number of sessions renewed and a reapable session, if any.
func scanHeartbeat(rows *sql.Rows) (int, []driver.SessionRef, error) {
	defer rows.Close()
	n := 0
	var refs []driver.SessionRef
	for rows.Next() {
		var id sql.NullString
		var pid sql.NullInt64
		var expired sql.NullBool
		if err := rows.Scan(&n, &id, &pid, &expired); err != nil {
			return 0, nil, err
		}
		if id.Valid {
			refs = append(refs, driver.SessionRef{ID: id.String, PID: int(pid.Int64), Expired: expired.Bool})
		}
	}
	return n, refs, rows.Err()
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

// SetStatementTimeout implements driver.Driver.
func (d *Driver) SetStatementTimeout(t time.Duration) {
	if d.bound != nil {
		d.bound.Set(t)
	}
}

// Embedded implements driver.Driver: the statements run in the server:
// the engine runs those that change the lock state to their end.
func (d *Driver) Embedded() bool { return false }
