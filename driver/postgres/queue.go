package postgres

import (
	"github.com/batonhq/baton/driver"
)

var _ driver.Queue = (*Driver)(nil)

// Queue implements driver.Driver: the driver itself.
func (d *Driver) Queue() driver.Queue { return d }
