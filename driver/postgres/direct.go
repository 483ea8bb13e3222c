package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/internal/stmtbound"
)

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
