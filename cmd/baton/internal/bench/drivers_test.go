package bench

// Tests open clients on every backend: link them all.
import (
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
)
