package batontest

import (
	"context"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/drivertest"
)

// Conformance runs the driver conformance suite (drivertest.Run) as a
// subtest per selected backend of kind name (postgres: directly and through
// PgBouncer), each driver opened by open on a database of its own and closed
// when its test ends.
func Conformance[D driver.Driver](t *testing.T, name string, open func(ctx context.Context, dsn, prefix string) (D, error)) {
	t.Helper()
	for _, b := range All() {
		if b.Name != name {
			continue
		}
		t.Run(b.Label, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) driver.Driver {
				d, err := open(context.Background(), b.NewDSN(t), "")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = d.Close() })
				return d
			})
		})
	}
}
