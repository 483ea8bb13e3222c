package baton_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestConcurrentMigrate: several processes' clients opening a fresh database
// at the same moment all succeed, and the schema is applied once.
func TestConcurrentMigrate(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		batontest.Concurrently(t, 6, func(int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := baton.Open(ctx, dsn)
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.NewSession(ctx)
			if err == nil {
				_, err = s.Lock(ctx, "m", baton.Read, 0, "x")
			}
			return err
		})
		st, err := batontest.Driver(t, dsn).MigrationStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(st) < 6 {
			t.Fatalf("%d migrations known, want every backend's (at least 6)", len(st))
		}
		for _, m := range st {
			if !m.Applied {
				t.Fatalf("migration %03d_%s not applied", m.Version, m.Name)
			}
		}
	})
}

// TestSchemaNewerRefused: a program refuses a database that a later
// version migrated further (a later lock state may mean what this program
// cannot see), on Open, saying so.
func TestSchemaNewerRefused(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		q := "INSERT INTO baton_migrations (version, name, applied_at) VALUES (?, ?, ?)"
		if b.Name == "postgres" {
			q = "INSERT INTO baton_migrations (version, name, applied_at) VALUES ($1, $2, $3)"
		}
		if _, err := db.ExecContext(ctxT(t), q, 999, "from_the_future", 1); err != nil {
			t.Fatal(err)
		}
		c, err := baton.Open(ctxT(t), dsn)
		if err == nil {
			c.Close()
			t.Fatal("Open accepted a database with a migration it does not know")
		}
		if !strings.Contains(err.Error(), "newer than this program") || !strings.Contains(err.Error(), "999") {
			t.Fatalf("Open: %v, want a schema-newer error naming migration 999", err)
		}
	})
}
