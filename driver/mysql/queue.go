package mysql

import (
	"github.com/batonhq/baton/driver"
)

// Queue implements driver.Driver: the driver itself.
func (d *Driver) Queue() driver.Queue { return d }
