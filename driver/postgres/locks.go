package postgres

import "github.com/batonhq/baton/driver"

var _ driver.Locks = (*Driver)(nil)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: fast_acquire_many, one
// statement.
func (d *Driver) AcquiresMany() bool { return true }

// RemovesInOneCall implements driver.Locks: {p}remove_requests and
// {p}withdraw_call.
func (d *Driver) RemovesInOneCall() bool { return true }

// ReleasesInTx implements driver.Locks: LockRegrant hands on instead.
func (d *Driver) ReleasesInTx() bool { return false }

// AdoptsHolders implements driver.Locks: the slow path finds the inline
// holder in the lock's row.
func (d *Driver) AdoptsHolders() bool { return false }
