package sqlite

import "github.com/batonhq/baton/driver"

var _ driver.Sessions = (*Driver)(nil)

// Sessions implements driver.Driver: the driver itself.
func (d *Driver) Sessions() driver.Sessions { return d }
