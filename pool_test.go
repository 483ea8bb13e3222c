package baton_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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

// TestEnqueueInPgxTx: EnqueueTx, EnqueueManyTx and NotifyTx in a pgx
// transaction (postgres.PgxTx): visible if and only if it commits.
func TestEnqueueInPgxTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "postgres" {
			t.Skip("pgx transactions are PostgreSQL's (the pool is the program's, opened directly)")
		}
		c, dsn := openQ(t, b)
		pool, err := pgxpool.New(ctxT(t), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		l, err := c.Listen(ctxT(t), "tx")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for _, commit := range []bool{false, true} {
			tx, err := pool.Begin(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			ptx := postgres.PgxTx{Tx: tx}
			id, err := c.EnqueueTx(ctxT(t), ptx, "pgxq", []byte("one"))
			if err != nil || id == 0 {
				t.Fatalf("EnqueueTx in a pgx transaction: %d %v", id, err)
			}
			u := baton.EnqueueOptions{UniqueKey: "pgx"}
			ids, err := c.EnqueueManyTx(ctxT(t), ptx, "pgxq", []baton.NewMessage{{Payload: []byte("two"), EnqueueOptions: u}, {Payload: []byte("three")}})
			if err != nil || len(ids) != 2 || ids[0] == 0 || ids[1] <= ids[0] {
				t.Fatalf("EnqueueManyTx in a pgx transaction: %v %v", ids, err)
			}
			if again, err := c.EnqueueTx(ctxT(t), ptx, "pgxq", []byte("dup"), u); err != nil || again != ids[0] {
				t.Fatalf("EnqueueTx of a unique key the pgx transaction took: %d %v, want %d", again, err, ids[0])
			}
			if err := c.NotifyTx(ctxT(t), ptx, "tx", fmt.Sprint(commit)); err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit(ctxT(t))
			} else {
				err = tx.Rollback(ctxT(t))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		s := session(t, c)
		if got := payloads(claim(t, s, "pgxq", baton.ClaimOptions{Max: 10})); strings.Join(got, ",") != "one,two,three" {
			t.Fatalf("after a rolled-back and a committed pgx transaction: %v", got)
		}
		if n := next(t, l); n.Payload != "true" {
			t.Fatalf("notification %+v, want the committed one only", n)
		}
	})
}
