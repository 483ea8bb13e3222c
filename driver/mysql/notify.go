package mysql

import "github.com/batonhq/baton/driver"

var _ driver.Notifier = (*Driver)(nil)

// Notifier implements driver.Driver: the driver itself.
func (d *Driver) Notifier() driver.Notifier { return d }
