package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Sessions implements driver.Driver: the driver itself.
func (d *Driver) Sessions() driver.Sessions { return d }

// Incarnation implements driver.Sessions: a server restart empties
// the MEMORY lock state, while holders of the lost state may still count
// themselves holders until their leases run out. The first session after
// it starts the new incarnation (newIncarnation).
func (d *Driver) Incarnation(ctx context.Context, lease time.Duration) (int64, time.Duration, error) {
	if _, err := d.SQL.ExecContext(ctx, d.Q("incarnation_lease"), lease.Microseconds()); err != nil {
		return 0, 0, fmt.Errorf("incarnation_lease: %w", err)
	}
	for attempt := 0; ; attempt++ {
		var id, waitUS int64
		err := d.SQL.QueryRowContext(ctx, d.Q("incarnation_get")).Scan(&id, &waitUS)
		switch {
		case err == nil:
			return id, time.Duration(waitUS) * time.Microsecond, nil
		case !errors.Is(err, sql.ErrNoRows) || attempt > 0:
			return 0, 0, fmt.Errorf("incarnation: %w", err)
		}
		if err := d.migrationLocked(ctx, func(ctx context.Context, c *sql.Conn) error {
			return d.newIncarnation(ctx, c, lease)
		}); err != nil {
			return 0, 0, err
		}
	}
}

// memoryTables are the MEMORY lock state's tables with the size each is
// made with (the baseline migration sets max_heap_table_size for the
// connection that makes them). The turnstiles' marks (lock_waits) and the
// incarnation's row are few: the server's limit does for them.
var memoryTables = []struct {
	name  string
	bytes int64
}{{"lock_fast", 256 << 20}, {"lock_idents", 1 << 30}, {"lock_requests", 1 << 30}}

// newIncarnation starts a new incarnation on c, under the migration
// lock, unless another client has started it meanwhile. Nothing grants
// before the incarnation exists (every statement that grants names the
// session's incarnation), so what the MEMORY tables hold then is nothing
// a restart left, and they are made again at their sizes: a restart
// sets every MEMORY table's limit to the server's global
// max_heap_table_size (16 MiB by default: about 10,600 rows of
// lock_fast), and only TRUNCATE (or ALTER) under a larger session
// value raises it again. Without the DROP privilege TRUNCATE needs, the
// tables keep the server's limit (docs/architecture.md). Then request
// ids start above the old ones, identifiers the restart left gated are
// the slow path's, and the incarnation is written, lockable once the
// longest lease in use has passed.
func (d *Driver) newIncarnation(ctx context.Context, c *sql.Conn, lease time.Duration) error {
	var id, waitUS int64
	switch err := c.QueryRowContext(ctx, d.Q("incarnation_get")).Scan(&id, &waitUS); {
	case err == nil:
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("incarnation: %w", err)
	}
	var heap int64
	if err := c.QueryRowContext(ctx, "SELECT @@SESSION.max_heap_table_size").Scan(&heap); err != nil {
		return fmt.Errorf("max_heap_table_size: %w", err)
	}
	defer func() {
		_, _ = c.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("SET SESSION max_heap_table_size = %d", heap))
	}()
	for _, t := range memoryTables {
		if _, err := c.ExecContext(ctx, fmt.Sprintf("SET SESSION max_heap_table_size = %d", t.bytes)); err != nil {
			return fmt.Errorf("max_heap_table_size: %w", err)
		}
		var me *gomysql.MySQLError
		if _, err := c.ExecContext(ctx, "TRUNCATE TABLE "+d.prefix+t.name); err != nil &&
			!(errors.As(err, &me) && (me.Number == errTableAccessDenied || me.Number == errDBAccessDenied)) {
			return fmt.Errorf("make %s%s again after a restart: %w", d.prefix, t.name, err)
		}
	}
	for _, q := range []string{"incarnation_seed_requests", "incarnation_seed_done"} {
		if _, err := c.ExecContext(ctx, d.Q(q)); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := d.markSlow(ctx, c); err != nil {
		return err
	}
	var longest int64
	if err := c.QueryRowContext(ctx, d.Q("incarnation_max_lease")).Scan(&longest); err != nil {
		return fmt.Errorf("incarnation_max_lease: %w", err)
	}
	if _, err := c.ExecContext(ctx, d.Q("incarnation_new"), max(longest, lease.Microseconds())); err != nil {
		return fmt.Errorf("incarnation_new: %w", err)
	}
	return nil
}

// markSlow marks every identifier with InnoDB state as the slow path's,
// one statement each (see fast_engage: no statement that writes the
// MEMORY table reads InnoDB), on c, the connection that holds the
// migration lock (a client with MaxConns has no other).
func (d *Driver) markSlow(ctx context.Context, c *sql.Conn) error {
	rows, err := c.QueryContext(ctx, d.Q("incarnation_slow_idents"))
	if err != nil {
		return fmt.Errorf("incarnation_slow_idents: %w", err)
	}
	ids, err := sqlbase.ScanAll(rows, sqlbase.ScanIdent)
	if err != nil {
		return fmt.Errorf("incarnation_slow_idents: %w", err)
	}
	for _, id := range ids {
		if _, err := c.ExecContext(ctx, d.Q("fast_engage"), id.Kind, bin(id.NS), bin(id.Name), 0); err != nil {
			return fmt.Errorf("fast_engage: %w", err)
		}
	}
	return nil
}

// idents runs a named query listing identifiers (kind, ns, name).
func (d *Driver) idents(ctx context.Context, query string) ([]driver.Ident, error) {
	rows, err := d.QueryNamed(ctx, nil, query)
	if err != nil {
		return nil, err
	}
	out, err := sqlbase.ScanAll(rows, sqlbase.ScanIdent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	return out, nil
}
