package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/stmtbound"
)

// Pooler modes, the DSN parameter pooler=.
const (
	poolerAuto        = "auto"        // detect at open (the default)
	poolerTransaction = "transaction" // a transaction-pooling proxy is in between
	poolerNone        = "none"        // a direct connection (or a session pooler)
)

// options are baton's own DSN parameters, taken out of the parameters pgx
// would otherwise send to the server as settings.
type options struct {
	pooler    string
	listenDSN string
}

// takeOptions removes baton's parameters from cfg and checks them.
func takeOptions(cfg *pgx.ConnConfig) (options, error) {
	o := options{pooler: poolerAuto}
	if v, ok := cfg.RuntimeParams["pooler"]; ok {
		delete(cfg.RuntimeParams, "pooler")
		switch v {
		case poolerAuto, poolerTransaction, poolerNone:
			o.pooler = v
		default:
			return o, fmt.Errorf("%w: pooler=%q: use auto, transaction or none", driver.ErrBadDSN, v)
		}
	}
	if v, ok := cfg.RuntimeParams["listen_dsn"]; ok {
		delete(cfg.RuntimeParams, "listen_dsn")
		o.listenDSN = v
	}
	if sp, ok := cfg.RuntimeParams["search_path"]; ok && !searchPathRE().MatchString(sp) {
		return o, fmt.Errorf("%w: search_path=%q: give schema names separated by commas, each a plain name (letters, digits, _ and $) or in double quotes", driver.ErrBadDSN, sp)
	}
	if _, sp := cfg.RuntimeParams["search_path"]; sp && o.pooler == poolerTransaction {
		return o, fmt.Errorf("%w: search_path cannot go through a transaction pooler as a connection setting (PgBouncer refuses it, and a session setting would leak to other clients): give the pooler's user a default with ALTER ROLE ... SET search_path, or use baton's table prefix", driver.ErrBadDSN)
	}
	return o, nil
}

// searchPathRE matches a search_path the server parses: a list of schema
// names, each plain or double-quoted ("" for a quote inside).
var searchPathRE = sync.OnceValue(func() *regexp.Regexp {
	name := `\s*(?:[\p{L}_][\p{L}\p{N}_$]*|"(?:[^"\x00]|"")+"|\$user)\s*`
	return regexp.MustCompile(`^` + name + `(?:,` + name + `)*$`)
})

// usePooler makes pgx talk to a transaction pooler: statements are sent
// unnamed (their descriptions cached on the client), so that nothing
// depends on which server connection runs them.
func usePooler(cfg *pgx.ConnConfig) {
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
}

// behindPooler tells whether db's connections go through a pooler, with
// one connection and no statement that fails (PgBouncer logs a warning for
// every startup setting it refuses): a PostgreSQL server announces, at
// connection start (BackendKeyData), the process id that
// pg_backend_pid() returns; a pooler announces one of its own, since the
// client is not tied to one server process (PgBouncer, in either mode,
// pgcat, Odyssey).
func behindPooler(ctx context.Context, db *sql.DB) (bool, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	var pid int64
	if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return false, err
	}
	var announced int64
	err = c.Raw(func(dc any) error {
		announced = int64(stmtbound.Unwrap(dc).(*stdlib.Conn).Conn().PgConn().PID())
		return nil
	})
	return announced != pid, err
}

// connect parses a DSN, takes baton's own parameters out, finds out
// whether a transaction pooler is in between, and opens a pool that works
// through it, checked with one connection.
func connect(ctx context.Context, dsn string, b *stmtbound.Bound) (*pgx.ConnConfig, options, bool, *sql.DB, error) {
	cfg, err := parseConfig(dsn)
	if err != nil {
		return nil, options{}, false, nil, err
	}
	if b != nil {
		b.Label = "postgres at " + hosts(cfg)
	}
	opts, err := takeOptions(cfg)
	if err != nil {
		return nil, opts, false, nil, err
	}
	pooled := opts.pooler == poolerTransaction
	if pooled {
		usePooler(cfg)
	}
	db := openDB(cfg, b)
	if opts.pooler == poolerAuto {
		if db, pooled, err = detectPooler(ctx, cfg, db, b); err != nil {
			return nil, opts, false, nil, connectErr(ctx, cfg, err)
		}
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, opts, false, nil, connectErr(ctx, cfg, err)
	}
	return cfg, opts, pooled, db, nil
}

// ConnectTimeout bounds the making of each connection (per host of a
// multi-host DSN) where neither the DSN's connect_timeout nor
// PGCONNECT_TIMEOUT sets one: a server that accepts connections and never
// answers fails the call instead of hanging it.
const ConnectTimeout = 5 * time.Second

// parseConfig parses a postgres:// DSN, with baton's default connect
// timeout.
func parseConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: bad postgres DSN: %w", driver.ErrBadDSN, errors.Unwrap(err))
	}
	if cfg.Database == "" {
		// The server would pick a database named after the user
		// (postgres, often), and baton would install itself there.
		return nil, fmt.Errorf("%w: postgres DSN names no database: add /database after the host (postgres://user@host:5432/database)", driver.ErrBadDSN)
	}
	if !setsConnectTimeout(dsn) {
		cfg.ConnectTimeout = ConnectTimeout
	}
	return cfg, nil
}

// setsConnectTimeout tells whether the DSN or the environment sets
// connect_timeout (0 included: no timeout, as the user asked).
func setsConnectTimeout(dsn string) bool {
	if os.Getenv("PGCONNECT_TIMEOUT") != "" {
		return true
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	_, set := u.Query()["connect_timeout"]
	return set
}

// detectPooler finds out whether db goes through a transaction pooler
// and, when it does, reopens it for one (the first connection was made
// for a direct server). On failure it closes db.
func detectPooler(ctx context.Context, cfg *pgx.ConnConfig, db *sql.DB, b *stmtbound.Bound) (*sql.DB, bool, error) {
	pooled, err := behindPooler(ctx, db)
	if err != nil || pooled {
		db.Close()
	}
	if err != nil || !pooled {
		return db, false, err
	}
	usePooler(cfg)
	return openDB(cfg, b), true, nil
}

// connectErr explains a failed connection: a search_path that a pooler
// refused, or the real cause of the failure.
func connectErr(ctx context.Context, cfg *pgx.ConnConfig, err error) error {
	if _, sp := cfg.RuntimeParams["search_path"]; sp && strings.Contains(err.Error(), "unsupported startup parameter: search_path") {
		return fmt.Errorf("%w: search_path: a transaction pooler (PgBouncer) refuses it as a connection setting: give the pooler's user a default with ALTER ROLE ... SET search_path, or use baton's table prefix", driver.ErrBadDSN)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// pgx calls it a dial error even when the server accepted.
		within := "before the deadline"
		if ctx.Err() == nil {
			within = fmt.Sprintf("within the connect timeout (%v; connect_timeout in the DSN)", cfg.ConnectTimeout)
		}
		return fmt.Errorf("connect to postgres at %s: no answer %s: %w", hosts(cfg), within, context.DeadlineExceeded)
	}
	return fmt.Errorf("connect to postgres at %s: %w", hosts(cfg), connectCause(err))
}

// hosts names the DSN's hosts, host:port, each once.
func hosts(cfg *pgx.ConnConfig) string {
	all := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks {
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(all, h) {
			all = append(all, h)
		}
	}
	return strings.Join(all, ",")
}

// OpenSQL opens the database a postgres:// DSN names as a plain *sql.DB
// for a program's own statements (the CLI's demo, tests): baton's own DSN
// parameters are taken out, and behind a transaction pooler statements are
// sent unnamed.
func OpenSQL(ctx context.Context, dsn string) (*sql.DB, error) {
	_, _, _, db, err := connect(ctx, dsn, nil)
	return db, err
}
