//go:build cgo

// Package cgo is an opt-in variant of baton's SQLite backend on
// github.com/mattn/go-sqlite3 (cgo) instead of the default pure-Go
// modernc.org/sqlite. Importing it makes sqlite: DSNs use mattn:
//
//	import _ "github.com/batonhq/baton/driver/sqlite/cgo"
//
// It is never linked unless imported. It needs cgo (a C compiler); measured
// in the same run, mattn drains queues faster and wakes listeners sooner,
// the pure-Go driver takes and releases locks faster (docs/benchmarks.md).
package cgo

import (
	"context"
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/sqlite"
)

// Flavor is mattn/go-sqlite3.
var Flavor = sqlite.Flavor{SQLDriver: "sqlite3", IsRetryable: isRetryable}

func isRetryable(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

func init() {
	driver.Replace(driver.Adapt(func(ctx context.Context, dsn, prefix string) (*sqlite.Driver, error) {
		return sqlite.OpenFlavor(ctx, Flavor, dsn, prefix)
	}), "sqlite")
}
