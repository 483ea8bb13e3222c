// Package mysql is baton's MySQL 8.0+ and MariaDB 10.6+ backend, on
// database/sql with github.com/go-sql-driver/mysql.
//
// DSNs: mysql://user:password@host:port/database?option=value, or the same
// with mariadb://. User and password are percent-decoded; the port defaults
// to 3306. Options are go-sql-driver's (tls, timeout, readTimeout,
// charset, ...) or session system variables (innodb_lock_wait_timeout=5,
// time_zone=+00:00, ...), which are set on every connection.
//
// Every connection runs at READ COMMITTED, set once per connection through
// the connection's system variables (tx_isolation on MariaDB before 11.1,
// transaction_isolation elsewhere; the name is probed at Open). The
// engine's named queries run as server-side prepared statements (see
// sqlbase.DB.Prepare); other statements have their parameters
// interpolated by go-sql-driver (one round trip instead of prepare,
// execute and close) unless the DSN says interpolateParams=false.
//
// The uncontended fast paths (LockFastAcquire, LockFastRelease) run on a
// second pool of autocommit=0 connections, where the first statement opens
// the transaction: no START TRANSACTION round trip. A release through
// InnoDB selects its request rows FOR UPDATE by the session's index, then
// deletes them by id.
//
// Wake-ups: MySQL has no LISTEN/NOTIFY. Each client keeps one connection in
// a statement that reads a sequence number and then SLEEPs for the poll
// interval; a transaction that grants a lock to another client bumps that
// client's sequence number and, after commit, interrupts the sleep with
// KILL QUERY on the connection id the listener registered (see sql/notify.sql
// and notify.go). Clients of the same process are woken directly.
package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	sqldrv "database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

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

// Now is the database clock in microseconds since the Unix epoch. It counts
// from UTC_TIMESTAMP so that the session's time zone (and its daylight
// saving jumps) cannot move it; NOW(6) and UTC_TIMESTAMP(6) have
// microsecond precision on MySQL 8 and MariaDB 10.x alike.
const Now = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"

// MySQL and MariaDB error numbers baton reacts to.
const (
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	errLockDeadlock    = 1213 // ER_LOCK_DEADLOCK
	// errDBAccessDenied and errTableAccessDenied: a statement the user
	// lacks the privilege for.
	errDBAccessDenied    = 1044 // ER_DBACCESS_DENIED_ERROR
	errTableAccessDenied = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errUnknownSysVar     = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE
	errQueryInterrupt    = 1317 // ER_QUERY_INTERRUPTED
	errNoSuchTable       = 1146 // ER_NO_SUCH_TABLE
)

// Driver is the MySQL/MariaDB backend.
type Driver struct {
	*sqlbase.DB
	txCleaned atomic.Int64 // unix nanoseconds of the last deleteEnded by TxPrepare
	gates     sync.Map     // identifiers known to have a gate row (never deleted)
	addr      string
	dbName    string
	prefix    string
	// bound bounds the statements of the main and fast pools
	// (stmtbound): the hot pool's and the lines' are bounded by their
	// connections' read and write timeouts.
	bound    *stmtbound.Bound
	server   string // VERSION()
	mariadb  bool
	migrator *sqlbase.Migrator
	wq       map[string]string // the wake_* queries of sql/notify.sql
	pumps    sync.Map          // client id -> *sqlbase.NotifyPump

	// fast is a second pool, of autocommit=0 connections, for the
	// uncontended fast paths only: their first statement opens the
	// transaction, which saves the START TRANSACTION round trip. Every
	// use ends with COMMIT or ROLLBACK, or discards the connection, so no
	// transaction is ever left open in the pool. Nothing else may use it.
	fast *sql.DB
	// hot is a third pool, autocommit like the main one, for the fast
	// paths' statements once fastReady (locks.go, execHot): they run
	// there with a context that cannot end, bounded instead by the
	// connections' read and write timeouts (hotTimeout, or the DSN's
	// readTimeout and writeTimeout). A context that can end costs
	// go-sql-driver a hand-off to the connection's watcher goroutine and
	// back, and database/sql a goroutine per Rows: 25-35% of these
	// statements' rate (docs/benchmarks.md, "MariaDB: what a cancellable
	// context costs every statement"). hotDB holds its prepared
	// statements.
	hot   *sql.DB
	hotDB *sqlbase.DB
	// many holds MariaDB's many-name acquire prepared on the hot pool,
	// by the number of names (manyStmt); noSeq: the server has no
	// Sequence engine, and that acquire reads its names from a derived
	// table (acquireManyReturning).
	many  [manyPrepared + 1]atomic.Pointer[sql.Stmt]
	noSeq atomic.Bool
	// lines are the sessions' own connections for turnstiles, from
	// lineDB (locks.go).
	lineDB *sql.DB
	lines  *sqlbase.Lines[*sql.Conn]
	// listenDB is the listeners' pool (notify.go): each holds one of its
	// connections while it runs, closed when it stops.
	listenDB *sql.DB
	// limited: LimitConns bounded the main pool, and everything but the
	// listener and the lines runs there (the fast paths stay on the main
	// pool, as a one-shot command's do).
	limited atomic.Bool
	// fastReady is set by Prepare, once the client has lived a heartbeat
	// or waited: before that (a one-shot command) the fast paths use the
	// main pool with START TRANSACTION, so the process holds one
	// connection instead of two.
	fastReady atomic.Bool
	fastUses  atomic.Int32 // fast-path calls on the main pool so far

	// serverStart is the server's start time on its own clock, in
	// microseconds, minus a second of slack (0: unknown). A registered
	// listener connection id older than that is from an earlier server
	// run and must never be interrupted.
	serverStart atomic.Int64

	bgMu sync.Mutex
	bg   sync.WaitGroup // KILL QUERY goroutines
	// killDB is the pool of the wake-ups' KILL QUERY (interrupt): one
	// connection, closed when idle; kills are the listener connections
	// still to interrupt, killing whether a goroutine sends them.
	killDB    *sql.DB
	kills     map[int64]struct{}
	killing   bool
	closed    bool
	listeners map[*listener]bool
}

var _ driver.Driver = (*Driver)(nil)

func init() { driver.Register(driver.Adapt(Open), "mysql", "mariadb") }

// Config is a parsed DSN: the go-sql-driver configuration (without the
// isolation level, which Open adds) and what baton needs to know about it.
type Config struct {
	// Driver is the go-sql-driver configuration.
	Driver *gomysql.Config
	// Addr is host:port.
	Addr string
	// DBName is the database (schema) holding baton's tables.
	DBName string
}

// driverOptions are go-sql-driver's own DSN options that baton passes
// through as they are.
var driverOptions = map[string]bool{
	"allowCleartextPasswords": true, "allowFallbackToPlaintext": true,
	"allowNativePasswords": true, "allowOldPasswords": true,
	"charset": true, "checkConnLiveness": true, "collation": true,
	"columnsWithAlias": true, "compress": true, "connectionAttributes": true,
	"interpolateParams": true, "loc": true, "maxAllowedPacket": true,
	"parseTime": true, "readTimeout": true, "rejectReadOnly": true,
	"serverPubKey": true, "timeTruncate": true, "timeout": true, "tls": true,
	"writeTimeout": true,
}

// refusedOptions are options that would change what baton's statements
// mean, with the reason.
var refusedOptions = map[string]string{
	"clientFoundRows":       "baton reads changed-row counts",
	"multiStatements":       "baton never sends several statements at once",
	"allowAllFiles":         "baton never loads files",
	"autocommit":            "baton manages its own transactions",
	"tx_isolation":          "baton sets READ COMMITTED itself",
	"transaction_isolation": "baton sets READ COMMITTED itself",
}

var (
	sysVarRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })
	numberRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`) })
	safeWordRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.,:+\-/]{0,200}$`) })
	hostRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.\-:%\[\]]+$`) })
)

// ParseDSN checks a mysql:// or mariadb:// URL and converts it to a
// go-sql-driver configuration. Errors name the problem and never contain
// the password.
func ParseDSN(dsn string) (*Config, error) {
	u, err := parseDSNURL(dsn)
	if err != nil {
		return nil, err
	}
	shown := u.Redacted()
	addr, err := dsnAddr(u, shown)
	if err != nil {
		return nil, err
	}
	dbName, err := dsnDatabase(u, shown)
	if err != nil {
		return nil, err
	}
	cfg, err := dsnDriverConfig(u, addr, shown)
	if err != nil {
		return nil, err
	}
	cfg.DBName = dbName
	return &Config{Driver: cfg, Addr: addr, DBName: dbName}, nil
}

// dsnDriverConfig is go-sql-driver's configuration for the DSN's user and
// options at addr, with baton's defaults.
func dsnDriverConfig(u *url.URL, addr, shown string) (*gomysql.Config, error) {
	user := u.User.Username()
	pass, _ := u.User.Password()
	if user == "" {
		return nil, fmt.Errorf("%w: mysql DSN %s names no user: write %s://user:password@host/database", driver.ErrBadDSN, shown, u.Scheme)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: mysql DSN %s: bad options: %v", driver.ErrBadDSN, shown, err)
	}
	opts, params, err := dsnOptions(q, shown)
	if err != nil {
		return nil, err
	}
	cfg, err := gomysql.ParseDSN("tcp(" + addr + ")/?" + opts.Encode())
	if err != nil {
		return nil, fmt.Errorf("%w: mysql DSN %s: %v", driver.ErrBadDSN, shown, err)
	}
	cfg.User, cfg.Passwd = user, pass
	setDefaults(cfg, q, params)
	return cfg, nil
}

// setDefaults completes a configuration: the options the DSN left out get
// baton's defaults, and the system variables go in.
func setDefaults(cfg *gomysql.Config, q url.Values, params map[string]string) {
	if _, set := q["interpolateParams"]; !set {
		// One round trip per statement instead of three packets (prepare,
		// execute, close) and two round trips. go-sql-driver refuses it
		// for character sets where escaping is unsafe.
		cfg.InterpolateParams = true
	}
	if _, set := q["timeout"]; !set {
		cfg.Timeout = ConnectTimeout
	}
	if len(params) > 0 {
		cfg.Params = params
	}
	cfg.Logger = &gomysql.NopLogger{} // errors are returned, not logged
}

// parseDSNURL parses the DSN as a URL of the mysql or mariadb scheme with a
// host.
func parseDSNURL(dsn string) (*url.URL, error) {
	scheme, _, _ := strings.Cut(dsn, ":")
	if scheme != "mysql" && scheme != "mariadb" {
		return nil, fmt.Errorf("%w: mysql DSN must start with mysql:// or mariadb://", driver.ErrBadDSN)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		// url.Error quotes the DSN or pieces of it, which may be pieces
		// of the password: say nothing of it.
		return nil, fmt.Errorf("%w: mysql DSN is not a valid URL: check the host and port, and percent-encode special characters (@ : / ? # %% space) in the user name and password", driver.ErrBadDSN)
	}
	return u, checkDSNURL(u, dsn, scheme)
}

// checkDSNURL checks the form of a parsed DSN: scheme://, a valid host, no
// fragment.
func checkDSNURL(u *url.URL, dsn, scheme string) error {
	shown := u.Redacted()
	switch {
	case u.Opaque != "" || !strings.HasPrefix(dsn, scheme+"://"):
		return fmt.Errorf("%w: mysql DSN %s: write %s://user:password@host:port/database", driver.ErrBadDSN, shown, scheme)
	case u.Hostname() == "":
		return fmt.Errorf("%w: mysql DSN %s names no host", driver.ErrBadDSN, shown)
	case !hostRE().MatchString(u.Host):
		return fmt.Errorf("%w: mysql DSN %s: bad host %q", driver.ErrBadDSN, shown, u.Host)
	case u.Fragment != "":
		return fmt.Errorf("%w: mysql DSN %s: unexpected #fragment", driver.ErrBadDSN, shown)
	}
	return nil
}

// dsnAddr is the DSN's host:port, the port 3306 by default.
func dsnAddr(u *url.URL, shown string) (string, error) {
	port := u.Port()
	if port == "" {
		port = "3306"
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%w: mysql DSN %s: bad port %q", driver.ErrBadDSN, shown, port)
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// dsnDatabase is the database the DSN's path names.
func dsnDatabase(u *url.URL, shown string) (string, error) {
	dbName := strings.TrimPrefix(u.Path, "/")
	switch {
	case dbName == "":
		return "", fmt.Errorf("%w: mysql DSN %s names no database: add /database after the host", driver.ErrBadDSN, shown)
	case strings.Contains(dbName, "/"):
		return "", fmt.Errorf("%w: mysql DSN %s: database name %q contains a slash", driver.ErrBadDSN, shown, dbName)
	case len(dbName) > 64:
		return "", fmt.Errorf("%w: mysql DSN %s: database name is longer than 64 characters", driver.ErrBadDSN, shown)
	}
	return dbName, nil
}

// dsnOptions sorts the DSN's options into go-sql-driver's own (opts, which
// its parser checks) and system variables (params, checked and quoted
// here, since the driver pastes them into a SET statement as they are).
func dsnOptions(q url.Values, shown string) (opts url.Values, params map[string]string, err error) {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	opts, params = url.Values{}, map[string]string{}
	for _, k := range keys {
		if err := sortOption(k, q[k], shown, opts, params); err != nil {
			return nil, nil, err
		}
	}
	return opts, params, nil
}

// sortOption checks option k, given the values vs, and puts it in opts
// (go-sql-driver's) or params (a system variable).
func sortOption(k string, vs []string, shown string, opts url.Values, params map[string]string) error {
	if len(vs) != 1 {
		return fmt.Errorf("%w: mysql DSN %s: option %s given %d times", driver.ErrBadDSN, shown, k, len(vs))
	}
	if why, ok := refusedOptions[k]; ok {
		return fmt.Errorf("%w: mysql DSN %s: option %s is not supported: %s", driver.ErrBadDSN, shown, k, why)
	}
	switch {
	case driverOptions[k]:
		opts.Set(k, vs[0])
	case sysVarRE().MatchString(k):
		v, err := sysVarValue(k, vs[0], shown)
		if err != nil {
			return err
		}
		params[k] = v
	default:
		return fmt.Errorf("%w: mysql DSN %s: unknown option %q", driver.ErrBadDSN, shown, k)
	}
	return nil
}

// sysVarValue is a system variable's value as SET takes it: a number as it
// is, a safe word quoted.
func sysVarValue(k, v, shown string) (string, error) {
	switch {
	case numberRE().MatchString(v):
		return v, nil
	case safeWordRE().MatchString(v):
		return "'" + v + "'", nil
	}
	return "", fmt.Errorf("%w: mysql DSN %s: value of system variable %s has characters baton does not pass on", driver.ErrBadDSN, shown, k)
}

// stripComments removes SQL comment lines, keeping "-- name:" markers, so
// that the statements sent are short.
func stripComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") && !strings.HasPrefix(t, "-- name:") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Open connects to the database a mysql:// or mariadb:// DSN names. prefix
// is the table prefix (already validated by the caller).
func Open(ctx context.Context, dsn, prefix string) (*Driver, error) {
	pc, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	d := &Driver{addr: pc.Addr, dbName: pc.DBName, prefix: prefix, bound: stmtbound.New("mysql server at " + pc.Addr)}

	// Probe on a connection without the isolation variable: its name
	// depends on the server.
	isoVar, err := d.probe(ctx, pc)
	if err != nil {
		return nil, err
	}
	db, err := d.openPools(ctx, pc, isoVar)
	if err != nil {
		return nil, err
	}
	if err := d.setUp(db, prefix); err != nil {
		db.Close()
		d.fast.Close()
		d.hot.Close()
		d.lineDB.Close()
		d.listenDB.Close()
		d.killDB.Close()
		return nil, err
	}
	return d, nil
}

// hotTimeout bounds each read and write on the hot pool's connections
// where the DSN sets no readTimeout or writeTimeout: the fast paths'
// statements on MEMORY tables answer in microseconds unless the server is
// stuck or out of reach, and a read that outlasts it ends the connection
// (the statement's outcome unknown, as for a statement cut off by a
// context; the engine withdraws the call).
const hotTimeout = 10 * time.Second

// openPools opens the main pool, checked with one connection, the fast
// one (d.fast), the hot one (d.hot) and the lines' (d.lineDB).
func (d *Driver) openPools(ctx context.Context, pc *Config, isoVar string) (*sql.DB, error) {
	db, err := d.pool(pc, isoVar, true, d.bound)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to mysql server at %s: %w", d.addr, err)
	}
	if d.fast, err = d.pool(pc, isoVar, false, d.bound); err != nil {
		db.Close()
		return nil, err
	}
	hc := *pc
	hc.Driver = pc.Driver.Clone()
	if hc.Driver.ReadTimeout == 0 {
		hc.Driver.ReadTimeout = hotTimeout
	}
	if hc.Driver.WriteTimeout == 0 {
		hc.Driver.WriteTimeout = hotTimeout
	}
	if d.hot, err = d.pool(&hc, isoVar, true, nil); err != nil {
		db.Close()
		d.fast.Close()
		return nil, err
	}
	// The lines' statements are bounded as the hot pool's (locks.go):
	// their waits in GET_LOCK last at most a second.
	lineDB, err := d.pool(&hc, isoVar, true, nil)
	if err != nil {
		db.Close()
		d.fast.Close()
		d.hot.Close()
		return nil, err
	}
	d.lineDB, d.lines = lineDB, d.newLines(lineDB)
	if d.listenDB, err = d.pool(pc, isoVar, true, d.bound); err != nil {
		db.Close()
		d.fast.Close()
		d.hot.Close()
		d.lineDB.Close()
		return nil, err
	}
	d.listenDB.SetMaxIdleConns(0)
	if d.killDB, err = d.pool(pc, isoVar, true, d.bound); err != nil {
		db.Close()
		d.fast.Close()
		d.hot.Close()
		d.lineDB.Close()
		d.listenDB.Close()
		return nil, err
	}
	d.killDB.SetMaxOpenConns(1)
	d.killDB.SetMaxIdleConns(1)
	d.killDB.SetConnMaxIdleTime(killIdle)
	return db, nil
}

// pool opens a pool of connections at READ COMMITTED (isoVar is the
// server's name for the isolation level), in autocommit mode or not,
// whose statements b bounds (nil: the pools whose connections' read and
// write timeouts bound them, hotTimeout).
func (d *Driver) pool(pc *Config, isoVar string, autocommit bool, b *stmtbound.Bound) (*sql.DB, error) {
	cfg := pc.Driver.Clone()
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params[isoVar] = "'READ-COMMITTED'"
	if !autocommit {
		cfg.Params["autocommit"] = "0"
	}
	conn, err := newConnector(cfg, b)
	if err != nil {
		return nil, fmt.Errorf("mysql %s: %w", d.addr, err)
	}
	db := sql.OpenDB(sqlbase.RetryFull(conn, tooManyConnections))
	// Keep enough idle connections that bursts of short transactions
	// do not pay a new handshake each.
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// killIdle is how long the wake-ups' connection (killDB) stays open idle:
// a burst of wake-ups reuses it, a quiet client closes it.
const killIdle = 5 * time.Second

// ConnectTimeout bounds the making of a connection (dial, handshake,
// login, session settings) where the DSN sets no timeout: a server that
// accepts connections and never answers fails the call instead of hanging
// it.
const ConnectTimeout = 5 * time.Second

// boundedConnector makes go-sql-driver's connections within the DSN's
// timeout, which go-sql-driver applies to dialling only: a server that
// accepts and stays silent would hang the handshake for ever.
type boundedConnector struct {
	sqldrv.Connector
	timeout time.Duration
	addr    string // host:port, for errors
}

func (c boundedConnector) Connect(ctx context.Context) (sqldrv.Conn, error) {
	if c.timeout <= 0 {
		return c.Connector.Connect(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.Connector.Connect(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		return nil, fmt.Errorf("cannot connect to mysql server at %s: no answer within the connect timeout (%v; timeout in the DSN): %w", c.addr, c.timeout, err)
	}
	return conn, err
}

// newConnector is go-sql-driver's connector for cfg, whose connections are
// made within cfg.Timeout and whose statements b bounds (stmtbound; nil:
// only their contexts and cfg's read and write timeouts do).
func newConnector(cfg *gomysql.Config, b *stmtbound.Bound) (sqldrv.Connector, error) {
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return boundedConnector{conn, cfg.Timeout, cfg.Addr}, nil
	}
	// go-sql-driver's Commit and Rollback are COMMIT and ROLLBACK sent
	// with no context: sent as statements instead, they are bounded too.
	return stmtbound.Connector(boundedConnector{conn, cfg.Timeout, cfg.Addr}, b, true), nil
}

// SetStatementTimeout implements driver.Driver.
func (d *Driver) SetStatementTimeout(t time.Duration) { d.bound.Set(t) }

// setUp reads the queries and migrations and builds the shared
// implementation on db.
func (d *Driver) setUp(db *sql.DB, prefix string) error {
	macros := map[string]string{"now": Now}
	q, err := sqlbase.LoadQueries(queries, "sql", prefix, macros, stripComments)
	if err != nil {
		return fmt.Errorf("mysql queries: %w", err)
	}
	// The wake-ups run on the listener's and the waker's own connections:
	// kept out of the set Prepare prepares.
	d.wq = map[string]string{}
	for name, body := range q {
		if strings.HasPrefix(name, "wake_") {
			d.wq[name] = body
			delete(q, name)
		}
	}
	migs, err := sqlbase.LoadMigrations(migrations, "migrations", prefix)
	if err != nil {
		return err
	}
	rts, err := sqlbase.LoadRoutines(routines, "sql/routines", prefix)
	if err != nil {
		return err
	}
	d.DB = &sqlbase.DB{SQL: db, D: &sqlbase.Dialect{
		Name:            "mysql",
		InsertReturning: false,
		UpdateReturning: false,
		// MariaDB has DELETE ... RETURNING, but a single-table DELETE
		// takes no index hint (release_list_ns in sql/locks.sql).
		DeleteReturning: false,
		Queries:         q,
		Wake:            d.wakeClients,
		IsRetryable:     IsRetryable,
		Events:          events(prefix, d.mariadb),
		Adopt:           d.adoptInTx,
		Deleted:         d.clearDeleted,
		Updated:         d.demoteAfter,
		PurgeIdle:       d.purgeIdle,
	}}
	d.hotDB = &sqlbase.DB{SQL: d.hot, D: d.DB.D}
	d.migrator = &sqlbase.Migrator{
		DB: db, Prefix: prefix, Migrations: migs, Routines: rts, Now: Now,
		Locked: d.migrationLocked,
	}
	return nil
}

// probe checks that the server answers, learns its version and the name of
// the isolation-level variable, and its start time.
func (d *Driver) probe(ctx context.Context, pc *Config) (string, error) {
	conn, err := newConnector(pc.Driver, d.bound)
	if err != nil {
		return "", fmt.Errorf("mysql %s: %w", d.addr, err)
	}
	db := sql.OpenDB(sqlbase.RetryFull(conn, tooManyConnections))
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return "", fmt.Errorf("cannot connect to mysql server at %s: no answer within the connect timeout (%v; timeout in the DSN): %w", d.addr, pc.Driver.Timeout, err)
	}
	if err != nil {
		return "", fmt.Errorf("cannot connect to mysql server at %s: %w", d.addr, err)
	}
	defer c.Close()
	if err := c.QueryRowContext(ctx, "SELECT VERSION()").Scan(&d.server); err != nil {
		return "", fmt.Errorf("mysql server at %s: %w", d.addr, err)
	}
	d.mariadb = strings.Contains(strings.ToLower(d.server), "mariadb")
	isoVar, err := d.isolationVar(ctx, c)
	if err != nil {
		return "", err
	}
	d.refreshServerStart(ctx, c)
	return isoVar, nil
}

// isolationVar is the server's name of the isolation-level variable:
// MySQL 8 and MariaDB 11.1+ call it transaction_isolation; MariaDB 10.x
// only knows tx_isolation (MySQL 5.7 knew both).
func (d *Driver) isolationVar(ctx context.Context, c *sql.Conn) (string, error) {
	var iso string
	err := c.QueryRowContext(ctx, "SELECT @@SESSION.transaction_isolation").Scan(&iso)
	var me *gomysql.MySQLError
	switch {
	case err == nil:
		return "transaction_isolation", nil
	case errors.As(err, &me) && me.Number == errUnknownSysVar:
		return "tx_isolation", nil
	}
	return "", fmt.Errorf("mysql server at %s: %w", d.addr, err)
}

// refreshServerStart reads the server's uptime and clock; on any error the
// previous value stays.
func (d *Driver) refreshServerStart(ctx context.Context, c *sql.Conn) {
	var name string
	var up, now int64
	if err := c.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &up); err != nil {
		return
	}
	if err := c.QueryRowContext(ctx, "SELECT "+Now).Scan(&now); err != nil {
		return
	}
	d.serverStart.Store(now - (up+1)*1_000_000)
}

// Server returns the server's VERSION(), for example "8.0.36" or
// "10.11.6-MariaDB".
func (d *Driver) Server() string { return d.server }

// Close implements driver.Driver: it stops listeners still running, waits
// for pending wake-up interruptions, then closes the connections.
func (d *Driver) Close() error {
	for _, l := range d.running() {
		l.stop()
	}
	d.bgMu.Lock()
	d.closed = true
	d.bgMu.Unlock()
	d.bg.Wait()
	d.lines.CloseAll()
	for i := range d.many {
		if st := d.many[i].Load(); st != nil {
			st.Close()
		}
	}
	return errors.Join(d.killDB.Close(), d.lineDB.Close(), d.listenDB.Close(), d.fast.Close(), d.hot.Close(), d.SQL.Close())
}

// running lists the listeners still running.
func (d *Driver) running() []*listener {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	ls := make([]*listener, 0, len(d.listeners))
	for l := range d.listeners {
		ls = append(ls, l)
	}
	return ls
}

// IsRetryable reports InnoDB's deadlock and lock wait timeout errors, after
// which the whole transaction can run again, and connections that broke
// before a statement was sent (go-sql-driver returns driver.ErrBadConn only
// then, so nothing was committed).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == errLockDeadlock || me.Number == errLockWaitTimeout
	}
	return errors.Is(err, sqldrv.ErrBadConn)
}

// Migrate implements driver.Driver.
func (d *Driver) Migrate(ctx context.Context) ([]driver.MigrationStatus, error) {
	return d.migrator.Up(ctx)
}

// MigrationStatus implements driver.Driver.
func (d *Driver) MigrationStatus(ctx context.Context) ([]driver.MigrationStatus, error) {
	return d.migrator.Status(ctx)
}

// migrationLockName is the GET_LOCK name that serializes migrations of one
// database and prefix; names longer than MySQL's 64 characters are hashed.
func (d *Driver) migrationLockName() string {
	name := d.dbName + "." + d.prefix + "migrate"
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(name))
		name = "baton.migrate." + hex.EncodeToString(sum[:20])
	}
	return name
}

// migrationLocked runs fn on a dedicated connection holding a user-level
// lock: DDL is not transactional in MySQL, so a transaction cannot keep
// concurrent migrators apart.
func (d *Driver) migrationLocked(ctx context.Context, fn func(context.Context, *sql.Conn) error) error {
	c, err := d.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	name := d.migrationLockName()
	if err := getLock(ctx, c, name); err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Ending the connection would release the lock too.
		var r sql.NullInt64
		_ = c.QueryRowContext(rctx, "SELECT RELEASE_LOCK(?)", name).Scan(&r)
	}()
	return fn(ctx, c)
}

// getLock takes the user-level lock name on c, waiting up to a minute.
func getLock(ctx context.Context, c *sql.Conn, name string) error {
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", name).Scan(&got); err != nil {
		return fmt.Errorf("take migration lock %q: %w", name, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("take migration lock %q: another process has held it for 60s", name)
	}
	return nil
}

// bin passes an identifier part as VARBINARY: never NULL, even when empty.
func bin(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

func list(q string, n int) string {
	return strings.ReplaceAll(q, "{list}", strings.TrimSuffix(strings.Repeat("?,", n), ","))
}

// oneShotFastUses is how many fast-path calls a client makes on the main
// pool before the fast pool: a lock around a command takes two (acquire,
// release) and opens no second connection; a busier client moves at its
// fifth call instead of waiting for Prepare.
const oneShotFastUses = 4

// Prepare implements driver.Driver: besides preparing statements, the fast
// paths move to their own pool (a client that lives this long takes locks
// often enough for the saved round trip to matter).
func (d *Driver) Prepare(ctx context.Context) error {
	if !d.limited.Load() {
		d.fastReady.Store(true)
	}
	return d.DB.Prepare(ctx)
}

// fastConn returns a connection in a transaction that the caller ends: one
// of the fast pool, whose first statement opens it, or, before Prepare, one
// of the main pool after START TRANSACTION.
// onMain says which: the caller ends it with doneFast.
func (d *Driver) fastConn(ctx context.Context) (*sql.Conn, bool, error) {
	if d.fastPoolDue() {
		c, err := d.fast.Conn(ctx)
		return c, false, err
	}
	c, err := d.SQL.Conn(ctx)
	if err != nil {
		return nil, true, err
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
		discard(c)
		return nil, true, err
	}
	return c, true, nil
}

// doneFast puts back a connection of fastConn after a call that
// committed. One of the main pool is committed first: a call that
// committed nothing (a procedure that found nothing to do) would leave
// its START TRANSACTION open on a connection that autocommit statements
// and isolation-level transactions reuse. The fast pool's next statement
// goes on in its transaction, as it always did.
func (d *Driver) doneFast(ctx context.Context, c *sql.Conn, onMain bool) {
	if onMain {
		_ = endFastTx(ctx, c, true)
		return
	}
	_ = c.Close()
}

// fastPoolDue reports whether the fast paths use their own pool by now:
// after Prepare, or from the call after oneShotFastUses on the main pool.
func (d *Driver) fastPoolDue() bool {
	if d.limited.Load() {
		return false
	}
	if d.fastReady.Load() || d.fastUses.Add(1) > oneShotFastUses {
		d.fastReady.Store(true)
		return true
	}
	return false
}

// endFastTx ends the transaction on a connection of the fast pool, COMMIT
// or ROLLBACK, and puts the connection back, or discards it when the
// ending failed.
func endFastTx(ctx context.Context, c *sql.Conn, commit bool) error {
	end := "ROLLBACK"
	if commit {
		end = "COMMIT"
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := c.ExecContext(ectx, end); err != nil {
		discard(c)
		return err
	}
	_ = c.Close()
	return nil
}

// tooManyConnections reports a connection the server refused for lack of
// slots: ER_CON_COUNT_ERROR (1040, max_connections) or
// ER_TOO_MANY_USER_CONNECTIONS (1203, max_user_connections).
func tooManyConnections(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1040 || me.Number == 1203)
}

// LimitConns implements driver.Driver: the main pool holds at most n
// connections (at most n idle) and runs every statement, the fast paths'
// included (their own pools stay unused); lines take what the bound
// leaves (none at 1: a contended waiter waits through the tables, woken
// by the listener). Called before the client runs any statement but its
// schema check.
func (d *Driver) LimitConns(n int) {
	if n <= 0 {
		return
	}
	d.limited.Store(true)
	d.SQL.SetMaxOpenConns(n)
	d.SQL.SetMaxIdleConns(n)
	d.lines.Max = int32(min(n-1, maxLines))
}

// Embedded implements driver.Driver: the statements run in the server:
// the engine runs those that change the lock state to their end.
func (d *Driver) Embedded() bool { return false }
