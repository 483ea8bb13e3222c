package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Sessions implements driver.Driver: the driver itself.
func (d *Driver) Sessions() driver.Sessions { return d }

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
