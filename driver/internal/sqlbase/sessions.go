package sqlbase

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
)

// SessionInsert implements driver.Tx.
func (t *Tx) SessionInsert(ctx context.Context, s driver.Session, lease time.Duration) error {
	_, err := t.exec(ctx, "session_insert", s.ID, s.ClientID, s.Host, s.PID, s.Name, us(lease), s.HostID)
	return err
}

// SessionRenew implements driver.Tx.
func (t *Tx) SessionRenew(ctx context.Context, ids []string, lease time.Duration) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := expandList(t.db.Q("session_renew"), t.db.D.Numbered, 2, len(ids))
	args := append([]any{us(lease)}, StringArgs(ids)...)
	r, err := t.listed(ctx, q, len(ids)).ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("session_renew: %w", err)
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// SessionListByClient implements driver.Tx.
func (t *Tx) SessionListByClient(ctx context.Context, clientID string) ([]string, error) {
	return t.strings(ctx, "session_list_by_client", clientID)
}

// SessionDelete implements driver.Tx.
func (t *Tx) SessionDelete(ctx context.Context, id string) error {
	_, err := t.exec(ctx, "session_delete", id)
	return err
}

// SessionListReapable implements driver.Tx.
func (t *Tx) SessionListReapable(ctx context.Context, clientID, hostID string, limit int) ([]driver.SessionRef, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "session_list_reapable", clientID, hostID, limit)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.SessionRef, error) {
		var r driver.SessionRef
		err := sc.Scan(&r.ID, &r.PID, &r.Expired)
		return r, err
	})
}

// SessionList implements driver.Tx.
func (t *Tx) SessionList(ctx context.Context) ([]driver.Session, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "session_list")
	if err != nil {
		return nil, fmt.Errorf("session_list: %w", err)
	}
	return ScanAll(rows, scanSession)
}

// scanSession reads one row of session_list; its errors name the query.
func scanSession(sc Scanner) (driver.Session, error) {
	var s driver.Session
	var created, expires int64
	if err := sc.Scan(&s.ID, &s.ClientID, &s.Host, &s.PID, &s.Name, &s.HostID, &created, &expires); err != nil {
		return s, fmt.Errorf("session_list: %w", err)
	}
	s.CreatedAt, s.ExpiresAt = FromMicros(created), FromMicros(expires)
	return s, nil
}

// SessionHeartbeat implements driver.Driver with two statements, each
// on its own (no transaction needed).
func (db *DB) SessionHeartbeat(ctx context.Context, p driver.HeartbeatParams) (int, []driver.SessionRef, error) {
	t := &Tx{db: db}
	n, err := t.SessionRenew(ctx, p.SessionIDs, p.Lease)
	if err != nil {
		return 0, nil, err
	}
	refs, err := t.SessionListReapable(ctx, p.ClientID, p.HostID, p.Limit)
	return n, refs, err
}

// Incarnation implements driver.Sessions for a backend whose lock state
// survives a crash: 0, and no wait.
func (db *DB) Incarnation(context.Context, time.Duration) (int64, time.Duration, error) {
	return 0, 0, nil
}
