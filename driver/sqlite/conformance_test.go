package sqlite_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/drivertest"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
)

// TestConformance runs the driver conformance suite on this backend.
func TestConformance(t *testing.T) {
	for _, b := range batontest.All() {
		if b.Name != "sqlite" {
			continue
		}
		t.Run(b.Label, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) driver.Driver {
				d, err := sqlite.Open(context.Background(), b.NewDSN(t), "")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = d.Close() })
				return d
			})
		})
	}
}
