package sqlbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/driver"
)

// MessageMeta implements driver.DataTx: message_meta (the messages
// table), then finished_meta (the history), each locking its row.
func (t *Tx) MessageMeta(ctx context.Context, id int64) (string, bool, bool, error) {
	for _, q := range []struct {
		name     string
		finished bool
	}{{"message_meta", false}, {"finished_meta", true}} {
		var meta sql.NullString
		err := t.row(ctx, q.name, id).Scan(&meta)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", false, false, fmt.Errorf("%s: %w", q.name, err)
		}
		return meta.String, q.finished, true, nil
	}
	return "", false, false, nil
}

// MessageSetMeta implements driver.DataTx.
func (t *Tx) MessageSetMeta(ctx context.Context, id int64, finished bool, meta string) (bool, error) {
	name := "message_set_meta"
	if finished {
		name = "finished_set_meta"
	}
	ok, err := affected(t.exec(ctx, name, meta, id))
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return ok, nil
}

// MessageSetOutput implements driver.DataTx.
func (t *Tx) MessageSetOutput(ctx context.Context, c driver.Claim, output string) (bool, error) {
	ok, err := affected(t.exec(ctx, "message_set_output", output, c.ID, c.SessionID, c.Attempt))
	if err != nil {
		return false, fmt.Errorf("message_set_output: %w", err)
	}
	return ok, nil
}

// withData adds the arguments of a listing's user-data filter (the tag,
// the metadata key and value) to a listing's, whose last is its limit:
// after it when the dialect numbers its arguments, else before it, each
// as often as the query names it.
func (db *DB) withData(args []any, d driver.DataFilter) []any {
	if db.D.Numbered {
		return append(args, d.Tag, d.MetaKey, d.MetaValue)
	}
	limit := args[len(args)-1]
	return append(args[:len(args)-1:len(args)-1], d.Tag, d.Tag, d.MetaKey, d.MetaKey, d.MetaValue, limit)
}
