package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver"
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
	if _, sp := cfg.RuntimeParams["search_path"]; sp && o.pooler == poolerTransaction {
		return o, fmt.Errorf("%w: search_path cannot go through a transaction pooler as a connection setting (PgBouncer refuses it, and a session setting would leak to other clients): give the pooler's user a default with ALTER ROLE ... SET search_path, or use baton's table prefix", driver.ErrBadDSN)
	}
	return o, nil
}

// usePooler makes pgx talk to a transaction pooler: statements are sent
// unnamed (their descriptions cached on the client), so that nothing
// depends on which server connection runs them.
func usePooler(cfg *pgx.ConnConfig) {
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
}

// behindPooler tells whether db's connections are multiplexed over shared
// server connections by a transaction pooler, at the cost of one extra
// connection, dialled while db's first one works. Two signs, either enough:
// a setting sent at connection start is refused as an "unsupported startup
// parameter" (PgBouncer with its default settings), or two client
// connections open at the same time are served by one backend process,
// which a direct connection can never be.
func behindPooler(ctx context.Context, cfg *pgx.ConnConfig, db *sql.DB) (bool, error) {
	probe := cfg.Copy()
	if probe.RuntimeParams == nil {
		probe.RuntimeParams = map[string]string{}
	}
	probe.RuntimeParams["synchronous_commit"] = "off"
	ch := make(chan dialed, 1)
	go func() {
		c, err := connectDirect(ctx, probe)
		ch <- dialed{c, err}
	}()
	var pa, pb int
	a, err := db.Conn(ctx)
	if err == nil {
		err = a.QueryRowContext(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pa)
		defer a.Close()
	}
	b := <-ch
	if b.err == nil {
		defer b.c.Close(context.Background())
	}
	if pooled, err := b.verdict(err); pooled || err != nil {
		return pooled, err
	}
	if err := b.c.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pb); err != nil {
		return false, err
	}
	return pa == pb, nil
}

// dialed is behindPooler's second connection, or why it failed.
type dialed struct {
	c   *pgx.Conn
	err error
}

// verdict is what the two connections' failures say (err: the first
// one's): a pooler when the second one's startup setting was refused,
// else the first failure; neither when both connections work.
func (b dialed) verdict(err error) (bool, error) {
	switch {
	case b.err != nil && strings.Contains(b.err.Error(), "unsupported startup parameter"):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, b.err
}

// connect parses a DSN, takes baton's own parameters out, finds out
// whether a transaction pooler is in between, and opens a pool that works
// through it, checked with one connection.
func connect(ctx context.Context, dsn string) (*pgx.ConnConfig, options, bool, *sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, options{}, false, nil, fmt.Errorf("%w: bad postgres DSN: %w", driver.ErrBadDSN, errors.Unwrap(err))
	}
	opts, err := takeOptions(cfg)
	if err != nil {
		return nil, opts, false, nil, err
	}
	pooled := opts.pooler == poolerTransaction
	if pooled {
		usePooler(cfg)
	}
	db := openDB(cfg)
	if opts.pooler == poolerAuto {
		if db, pooled, err = detectPooler(ctx, cfg, db); err != nil {
			return nil, opts, false, nil, connectErr(cfg, err)
		}
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, opts, false, nil, connectErr(cfg, err)
	}
	return cfg, opts, pooled, db, nil
}

// detectPooler finds out whether db goes through a transaction pooler
// and, when it does, reopens it for one (the first connection was made
// for a direct server). On failure it closes db.
func detectPooler(ctx context.Context, cfg *pgx.ConnConfig, db *sql.DB) (*sql.DB, bool, error) {
	pooled, err := behindPooler(ctx, cfg, db)
	if err != nil || pooled {
		db.Close()
	}
	if err != nil || !pooled {
		return db, false, err
	}
	usePooler(cfg)
	return openDB(cfg), true, nil
}

// connectErr explains a failed connection: a search_path that a pooler
// refused, or the real cause of the failure.
func connectErr(cfg *pgx.ConnConfig, err error) error {
	if _, sp := cfg.RuntimeParams["search_path"]; sp && strings.Contains(err.Error(), "unsupported startup parameter: search_path") {
		return fmt.Errorf("%w: search_path: a transaction pooler (PgBouncer) refuses it as a connection setting: give the pooler's user a default with ALTER ROLE ... SET search_path, or use baton's table prefix", driver.ErrBadDSN)
	}
	return fmt.Errorf("connect to postgres at %s:%d: %w", cfg.Host, cfg.Port, connectCause(err))
}

// OpenSQL opens the database a postgres:// DSN names as a plain *sql.DB
// for a program's own statements (the CLI's demo, tests): baton's own DSN
// parameters are taken out, and behind a transaction pooler statements are
// sent unnamed.
func OpenSQL(ctx context.Context, dsn string) (*sql.DB, error) {
	_, _, _, db, err := connect(ctx, dsn)
	return db, err
}
