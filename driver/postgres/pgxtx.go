package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PgxTx lets baton's functions that work in the caller's transaction
// (Client.EnqueueTx, EnqueueManyTx, NotifyTx, WaitingTx) run in a pgx
// transaction:
//
//	tx, _ := pool.Begin(ctx)
//	id, err := client.EnqueueTx(ctx, postgres.PgxTx{Tx: tx}, "mail", payload)
//	... tx.Commit(ctx)
type PgxTx struct {
	Tx pgx.Tx
}

// ExecContext runs a statement in the transaction.
func (t PgxTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := t.Tx.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxResult(tag), nil
}

// ScanRow runs a statement that returns one row and scans it into dest.
func (t PgxTx) ScanRow(ctx context.Context, query string, args []any, dest ...any) error {
	return t.Tx.QueryRow(ctx, query, args...).Scan(dest...)
}

// QueryIDPayloads runs a statement whose rows are an id and a payload.
func (t PgxTx) QueryIDPayloads(ctx context.Context, query string, args ...any) ([]int64, [][]byte, error) {
	rows, err := t.Tx.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var payloads [][]byte
	for rows.Next() {
		var id int64
		var p []byte
		if err := rows.Scan(&id, &p); err != nil {
			return nil, nil, err
		}
		ids, payloads = append(ids, id), append(payloads, p)
	}
	return ids, payloads, rows.Err()
}

type pgxResult pgconn.CommandTag

func (r pgxResult) LastInsertId() (int64, error) {
	return 0, errors.New("postgres: LastInsertId is not supported (ids come back in rows)")
}

func (r pgxResult) RowsAffected() (int64, error) { return pgconn.CommandTag(r).RowsAffected(), nil }
