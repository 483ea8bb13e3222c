package sqlbase

import (
	"context"
	"fmt"
)

// SessionNamedLive implements driver.Sessions: whether a session named
// name has a lease that has not run out.
func (db *DB) SessionNamedLive(ctx context.Context, name string) (bool, error) {
	var n int64
	if err := db.RowNamed(ctx, nil, "session_named_live", name).Scan(&n); err != nil {
		return false, fmt.Errorf("session_named_live: %w", err)
	}
	return n > 0, nil
}
