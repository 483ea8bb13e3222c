package postgres_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestPoolerProbeLogsNothing: detecting PgBouncer at open costs it no
// warning (a refused startup setting made it log two or three per baton
// process); PgBouncer is still detected, and a direct server is not
// taken for a pooler.
func TestPoolerProbeLogsNothing(t *testing.T) {
	dsn := batontest.NewDSN(t, "pgbouncer")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	warnings := func() int {
		b, err := os.ReadFile(batontest.BouncerLog())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "WARNING") && (strings.Contains(l, "synchronous_commit") || strings.Contains(l, db)) {
				n++
			}
		}
		return n
	}
	before := warnings()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		d, err := postgres.Open(ctx, dsn, "baton_")
		if err != nil {
			t.Fatal(err)
		}
		if !d.Pooled() {
			t.Fatal("PgBouncer not detected")
		}
		if _, err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	// PgBouncer logs a refusal before it answers: the opens are done.
	if n := warnings() - before; n != 0 {
		t.Fatalf("PgBouncer logged %d warnings for 3 opens (see %s)", n, batontest.BouncerLog())
	}
	d, err := postgres.Open(ctx, batontest.NewDSN(t, "postgres"), "baton_")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Pooled() {
		t.Fatal("a direct connection taken for a pooler")
	}
}
