package sqlite

import (
	"context"

	"github.com/batonhq/baton/driver"
)

var _ driver.Locks = (*Driver)(nil)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: no statement takes several names
// at once.
func (d *Driver) AcquiresMany() bool { return false }

// RemovesInOneCall implements driver.Locks: the engine withdraws in its
// transaction.
func (d *Driver) RemovesInOneCall() bool { return false }

// ReleasesInTx implements driver.Locks: a release that hands on runs in
// the engine's transaction, one commit.
func (d *Driver) ReleasesInTx() bool { return true }

// AdoptsHolders implements driver.Locks: no call moves another session's
// inline holder.
func (d *Driver) AdoptsHolders() bool { return false }

// LockRequestStatusesGated implements driver.Locks: SQLite's gate is the
// write lock, so no identifier is ever found gated.
func (d *Driver) LockRequestStatusesGated(ctx context.Context, ids []int64) (map[int64]driver.Request, []driver.Ident, error) {
	st, err := d.LockRequestStatuses(ctx, ids)
	return st, nil, err
}
