package baton_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestOpenOnProgramsPool: a client on the program's own pgx pool or
// *sql.DB locks, enqueues and hands a lock over through LISTEN; closing the
// client leaves the program's pool open.
func TestOpenOnProgramsPool(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "postgres" {
			t.Skip("pgx pools are PostgreSQL's (behind a pooler, open by DSN)")
		}
		dsn := b.NewDSN(t)
		pool, err := pgxpool.New(ctxT(t), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		sdb, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		opens := map[string]func() (driver.Driver, error){
			"pgxpool": func() (driver.Driver, error) { return postgres.OpenPool(ctxT(t), pool, "baton_") },
			"sql.DB":  func() (driver.Driver, error) { return postgres.OpenDB(ctxT(t), sdb, "baton_") },
		}
		for _, how := range []string{"pgxpool", "sql.DB"} {
			drv, err := opens[how]()
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			c, err := baton.NewClient(ctxT(t), drv, baton.Options{PollInterval: time.Hour}) // hand-off by LISTEN only
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			s1, s2 := session(t, c), session(t, c)
			mustLock(t, s1, "pool", baton.Write, how)
			got := async(s2, "pool", baton.Write, 10*time.Second, how)
			waitPending(t, c, s2, 1)
			if _, err := s1.Release(ctxT(t), "pool"); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, got); err != nil {
				t.Fatalf("%s: hand-off: %v", how, err)
			}
			if _, err := c.Enqueue(ctxT(t), "pooled", []byte(how)); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := pool.Ping(ctxT(t)); err != nil {
			t.Fatalf("closing the client closed the program's pgx pool: %v", err)
		}
		var n int
		if err := sdb.QueryRowContext(ctxT(t), "SELECT count(*) FROM baton_messages WHERE queue = 'pooled'").Scan(&n); err != nil || n != 2 {
			t.Fatalf("closing the client closed the program's *sql.DB, or lost messages: %d %v", n, err)
		}
		other, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = postgres.OpenDB(context.Background(), other, "baton_")
		wantErr(t, err, baton.ErrBadDSN)
	})
}
