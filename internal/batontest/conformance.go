package batontest

import (
	"context"
	"os"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/drivertest"
)

// Conformance runs the driver conformance suite (drivertest.Run) as a
// subtest per selected backend of kind name (postgres: directly and through
// PgBouncer), each driver opened by open on a database of its own and closed
// when its test ends. A BATON_TEST_BACKENDS that names an unknown backend
// fails the test; one that leaves out every backend of this kind skips it,
// saying so.
func Conformance[D driver.Driver](t *testing.T, name string, open func(ctx context.Context, dsn, prefix string) (D, error)) {
	t.Helper()
	ran := 0
	for _, b := range Selected(t) {
		if b.Name != name {
			continue
		}
		ran++
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
	if ran == 0 {
		t.Skipf("BATON_TEST_BACKENDS=%q selects no %s backend", os.Getenv("BATON_TEST_BACKENDS"), name)
	}
}
