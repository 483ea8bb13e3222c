package sqlbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
)

// QueueSetLimits implements driver.LimitsTx.
func (t *Tx) QueueSetLimits(ctx context.Context, name, limits string) (bool, error) {
	res, err := t.exec(ctx, "queue_limits_set", nullString(limits), name)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	// MySQL counts only changed rows: the same limits again.
	return t.QueueExists(ctx, name)
}

// QueueLimits implements driver.LimitsTx.
func (t *Tx) QueueLimits(ctx context.Context, name string) (string, bool, error) {
	var s sql.NullString
	err := t.row(ctx, "queue_limits", name).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("queue_limits: %w", err)
	}
	return s.String, true, nil
}

// QueueLimitsLock implements driver.LimitsTx.
func (t *Tx) QueueLimitsLock(ctx context.Context, name string) (string, int64, bool, error) {
	var s sql.NullString
	var now int64
	err := t.row(ctx, "queue_limits_lock", name).Scan(&s, &now)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("queue_limits_lock: %w", err)
	}
	return s.String, now, true, nil
}

// ClaimLimitedFlight implements driver.LimitsTx.
func (t *Tx) ClaimLimitedFlight(ctx context.Context, queue string, payload bool) ([]driver.LimitedRow, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_limited_flight", flag(payload), queue)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.LimitedRow, error) {
		var r driver.LimitedRow
		var key []byte
		var kind sql.NullString
		err := sc.Scan(&key, &kind, &r.Payload)
		r.Key, r.HasKey, r.Kind = string(key), key != nil, kind.String
		return r, err
	})
}

// ClaimLimitedPage implements driver.LimitsTx.
func (t *Tx) ClaimLimitedPage(ctx context.Context, queue, kind string, payload bool, after driver.ListPos, limit int) ([]driver.LimitedRow, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_limited_page", flag(payload), queue, kind,
		after.Priority, after.OrderAt, after.ID, limit)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.LimitedRow, error) {
		var r driver.LimitedRow
		var key []byte
		var k sql.NullString
		err := sc.Scan(&r.ID, &r.Pos.Priority, &r.Pos.OrderAt, &key, &k, &r.Payload)
		r.Pos.ID = r.ID
		r.Key, r.HasKey, r.Kind = string(key), key != nil, k.String
		return r, err
	})
}

// ClaimLimitedDirect implements driver.LimitsTx (claim_limited_direct,
// where the dialect has it).
func (t *Tx) ClaimLimitedDirect(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) ([]driver.Message, bool, error) {
	if _, has := t.db.D.Queries["claim_limited_direct"]; !has {
		return nil, false, nil
	}
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_limited_direct", sessionID, driver.ClaimLimited, us(lease), queue, limit, kind)
	ms, err := scanMessages("claim_limited_direct", rows, err)
	return ms, true, err
}

// ClaimLimitedOne implements driver.LimitsTx: outside a transaction,
// claim_limited_one (a routine, which commits its own) where the dialect
// has it; in a transaction, claim_limited_budget and the starts where the
// dialect has that (SQLite: a write's counts are never stale).
func (t *Tx) ClaimLimitedOne(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) ([]driver.Message, bool, error) {
	if _, has := t.db.D.Queries["claim_limited_one"]; has && t.Tx == nil {
		rows, err := t.db.QueryNamed(ctx, nil, "claim_limited_one", sessionID, driver.ClaimLimited, us(lease), queue, limit, kind)
		ms, err := scanMessages("claim_limited_one", rows, err)
		return ms, true, err
	}
	if _, has := t.db.D.Queries["claim_limited_budget"]; has && t.Tx != nil {
		return t.claimLimitedBudget(ctx, queue, kind, sessionID, lease, limit)
	}
	return nil, false, nil
}

// claimLimitedBudget is ClaimLimitedOne in a transaction: the claim, then
// its starts counted at the claim's own now (claim_until less the lease),
// then, when that opened a bucket, the buckets no window overlaps go.
func (t *Tx) claimLimitedBudget(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) ([]driver.Message, bool, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "claim_limited_budget", sessionID, driver.ClaimLimited, us(lease), queue, limit, kind)
	ms, err := scanMessages("claim_limited_budget", rows, err)
	if err != nil || len(ms) == 0 {
		return nil, true, err
	}
	now := ms[0].ClaimUntil.UnixMicro() - us(lease)
	var n int64
	switch err := t.row(ctx, "queue_starts_add_at", queue, now, len(ms)).Scan(&n); {
	case errors.Is(err, sql.ErrNoRows): // no rate
	case err != nil:
		return nil, true, fmt.Errorf("queue_starts_add_at: %w", err)
	case n == int64(len(ms)):
		if _, err := t.exec(ctx, "queue_starts_prune_at", queue, now); err != nil {
			return nil, true, err
		}
	}
	return ms, true, nil
}

// QueueStarts implements driver.LimitsTx.
func (t *Tx) QueueStarts(ctx context.Context, queue string) ([]driver.StartBucket, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "queue_starts_list", queue)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, func(sc Scanner) (driver.StartBucket, error) {
		var b driver.StartBucket
		var part []byte
		err := sc.Scan(&part, &b.End, &b.N)
		b.Part = string(part)
		return b, err
	})
}

// QueueStartsAdd implements driver.LimitsTx.
func (t *Tx) QueueStartsAdd(ctx context.Context, queue, part string, bucketEnd int64, n int) error {
	_, err := t.exec(ctx, "queue_starts_add", queue, part, bucketEnd, n)
	return err
}

// QueueStartsPrune implements driver.LimitsTx.
func (t *Tx) QueueStartsPrune(ctx context.Context, queue string, before int64) error {
	_, err := t.exec(ctx, "queue_starts_prune", queue, before)
	return err
}

// flag is a boolean argument as 0 or 1.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
