package sqlbase

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton/driver"
)

// ThroughputBacklog implements driver.QueueTx.
func (t *Tx) ThroughputBacklog(ctx context.Context, queue string, ready, scheduled, retrying int64) error {
	_, err := t.exec(ctx, "throughput_backlog", queue, ready, scheduled, retrying)
	return err
}

// ThroughputSampled implements driver.QueueTx.
func (t *Tx) ThroughputSampled(ctx context.Context) (int, error) {
	var n int
	if err := t.row(ctx, "throughput_sampled").Scan(&n); err != nil {
		return 0, fmt.Errorf("throughput_sampled: %w", err)
	}
	return n, nil
}

// ThroughputHistory implements driver.QueueTx.
func (t *Tx) ThroughputHistory(ctx context.Context, queue string, minutes int) ([]driver.RollupRow, int64, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "throughput_history", queue, minutes)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []driver.RollupRow
	var now int64
	for rows.Next() {
		var r driver.RollupRow
		var ready, scheduled, retrying sql.NullInt64
		dest := []any{&r.Minute, &now, &r.Acked, &r.Retried, &r.Dead, &ready, &scheduled, &retrying}
		for i := range r.Durations {
			dest = append(dest, &r.Durations[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, fmt.Errorf("throughput_history: %w", err)
		}
		r.Sampled = ready.Valid
		r.Ready, r.Scheduled, r.Retrying = ready.Int64, scheduled.Int64, retrying.Int64
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("throughput_history: %w", err)
	}
	return out, now, nil
}
