package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/stmtbound"
)

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
