package mysql

import "github.com/batonhq/baton/driver"

var _ driver.Locks = (*Driver)(nil)

// Locks implements driver.Driver: the driver itself.
func (d *Driver) Locks() driver.Locks { return d }

// AcquiresMany implements driver.Locks: fast_acquire for every name in
// one call.
func (d *Driver) AcquiresMany() bool { return true }

// RemovesInOneCall implements driver.Locks: {p}remove_requests and
// {p}withdraw_call.
func (d *Driver) RemovesInOneCall() bool { return true }

// ReleasesInTx implements driver.Locks: LockRegrant hands on instead.
func (d *Driver) ReleasesInTx() bool { return false }

// AdoptsHolders implements driver.Locks: the slow path adopts a fast
// holder into InnoDB, and a release with a limit clears the fast row's
// session of an adopted holder (release_instances), so that a fast
// release would no longer find its way to the instance.
func (d *Driver) AdoptsHolders() bool { return true }
