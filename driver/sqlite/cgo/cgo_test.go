//go:build cgo

package cgo_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/drivertest"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/driver/sqlite/cgo"
)

// TestCgoFlavor: with the cgo package imported, sqlite: DSNs run on mattn
// and baton works on it (a lock and a queue round trip).
func TestCgoFlavor(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "cgo.db")
	d, err := driver.Open(ctx, dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, ok := driver.Lookup(dsn); !ok {
		t.Fatal("sqlite scheme not registered")
	}
	c, err := baton.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "ns", baton.Write, 0, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "q", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Claim(ctx, "q", baton.ClaimOptions{})
	if err != nil || len(ms) != 1 || string(ms[0].Payload) != "hi" {
		t.Fatalf("claim: %v %v", ms, err)
	}
}

// TestConformance runs the driver conformance suite on the cgo flavor.
func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) driver.Driver {
		d, err := sqlite.OpenFlavor(context.Background(), cgo.Flavor, "sqlite:"+filepath.Join(t.TempDir(), "baton.db"), "baton_")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d
	})
}
