// Command gatedcost measures session locks on a name that a transaction
// has locked before (Client.LockTx), which leaves the name gated: the
// slow path decides every later request, release and hand-on of it under
// its row lock, counting a gate that a transaction may hold. It reports
// per operation the mean time and, on MySQL/MariaDB, the client
// statements the server served (Questions, less the status query's own;
// a procedure call counts one) and the redo log's fsyncs:
//
//   - pair: Lock(Write, timeout 1 s) and Release by one session, nobody
//     else on the name;
//   - hand-off: a second session's Lock(Write, 1 s), waiting, granted by
//     the first session's Release (the release's start to the grant),
//     then released.
//
// It works in a scratch database of its own on the DSN's server (a
// schema on PostgreSQL), dropped at the end. Nothing else should run
// against the server meanwhile (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/gatedcost -dsn mysql://root@127.0.0.1:3306/test -cycles 300
//	go run ./scripts/gatedcost -dsn postgres://postgres@127.0.0.1:5432/test -cycles 300
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// bench is what the measurements share: the client, two sessions, the
// server's admin connection and the cycle count.
type bench struct {
	c       *baton.Client
	a, b    *baton.Session
	admin   *sql.DB
	cycles  int
	counted bool // the server counts statements and fsyncs (MySQL/MariaDB)
}

func main() {
	dsn := flag.String("dsn", "", "the database (mysql:// or postgres://)")
	cycles := flag.Int("cycles", 300, "cycles of each operation")
	flag.Parse()
	ctx := context.Background()
	u, err := url.Parse(*dsn)
	if err != nil {
		log.Fatal(err)
	}
	scratch := fmt.Sprintf("gatedcost_%d", os.Getpid())
	admin, target, drop := scratchDB(u, scratch)
	defer admin.Close()
	defer drop()
	c, err := baton.Open(ctx, target)
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	if err := gate(ctx, c, u, scratch); err != nil {
		log.Print("LockTx: ", err)
		return
	}
	b := &bench{c: c, admin: admin, cycles: *cycles, counted: u.Scheme != "postgres" && u.Scheme != "postgresql"}
	if b.a, err = c.NewSession(ctx); err == nil {
		b.b, err = c.NewSession(ctx)
	}
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Printf("%-10s %10s %12s %12s\n", "operation", "mean µs", "statements", "fsyncs")
	b.pair(ctx)
	b.handoff(ctx)
}

// gate leaves the name gated: a transaction locks it once and commits.
func gate(ctx context.Context, c *baton.Client, u *url.URL, scratch string) error {
	db, err := sql.Open(sqlDriver(u), sqlDSN(u, scratch))
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := c.LockTx(ctx, tx, "gc", baton.Write, time.Second, "n"); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// report prints an operation's mean time, and its statements and fsyncs
// since before where the server counts them (before nil: the hand-off,
// whose loop also polls the lock table).
func (b *bench) report(ctx context.Context, name string, total time.Duration, before map[string]int64) {
	line := fmt.Sprintf("%-10s %10.0f", name, float64(total.Microseconds())/float64(b.cycles))
	if b.counted && before != nil {
		after := status(ctx, b.admin)
		q := after["Questions"] - before["Questions"] - 1
		f := after["Innodb_data_fsyncs"] - before["Innodb_data_fsyncs"]
		line += fmt.Sprintf(" %12.1f %12.2f", float64(q)/float64(b.cycles), float64(f)/float64(b.cycles))
	}
	fmt.Println(line)
}

// pair: Lock and Release by one session, nobody else on the name.
func (b *bench) pair(ctx context.Context) {
	var total time.Duration
	before := status(ctx, b.admin)
	for range b.cycles {
		start := time.Now()
		lock(ctx, b.a)
		release(ctx, b.a)
		total += time.Since(start)
	}
	b.report(ctx, "pair", total, before)
}

// handoff: b waits for the name, granted by a's release.
func (b *bench) handoff(ctx context.Context) {
	var total time.Duration
	for range b.cycles {
		lock(ctx, b.a)
		got := make(chan time.Time, 1)
		go func() {
			lock(ctx, b.b)
			got <- time.Now()
		}()
		waitPending(ctx, b.c, b.b)
		start := time.Now()
		release(ctx, b.a)
		total += (<-got).Sub(start)
		release(ctx, b.b)
	}
	b.report(ctx, "hand-off", total, nil)
}

func lock(ctx context.Context, s *baton.Session) {
	if _, err := s.Lock(ctx, "gc", baton.Write, time.Second, "n"); err != nil {
		log.Fatal(err)
	}
}

func release(ctx context.Context, s *baton.Session) {
	if _, err := s.Release(ctx, "gc"); err != nil {
		log.Fatal(err)
	}
}

// waitPending waits until s's lock request shows as waiting.
func waitPending(ctx context.Context, c *baton.Client, s *baton.Session) {
	for {
		locks, err := c.Locks(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, l := range locks {
			if l.Session == s.ID() && l.Status == "PENDING" {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// status reads the server's counters (MySQL/MariaDB; nil elsewhere).
func status(ctx context.Context, db *sql.DB) map[string]int64 {
	out := map[string]int64{}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Innodb_data_fsyncs')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if rows.Scan(&k, &v) == nil {
			out[k] = v
		}
	}
	return out
}

func sqlDriver(u *url.URL) string {
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		return "pgx"
	}
	return "mysql"
}

// sqlDSN is the DSN of database/sql's driver for the scratch database.
func sqlDSN(u *url.URL, scratch string) string {
	if sqlDriver(u) == "pgx" {
		v := *u
		q := v.Query()
		q.Set("search_path", scratch)
		v.RawQuery = q.Encode()
		return v.String()
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", u.User.Username(), pass, u.Host, scratch)
}

// scratchDB makes the scratch database (a schema on PostgreSQL) and
// returns a connection to the server, baton's DSN for it and its drop.
func scratchDB(u *url.URL, scratch string) (*sql.DB, string, func()) {
	v := *u
	var admin *sql.DB
	var err error
	if sqlDriver(u) == "pgx" {
		admin, err = sql.Open("pgx", u.String())
		if err == nil {
			_, err = admin.Exec("CREATE SCHEMA " + scratch)
		}
		q := v.Query()
		q.Set("search_path", scratch)
		v.RawQuery = q.Encode()
		if err != nil {
			log.Fatal(err)
		}
		return admin, v.String(), func() { _, _ = admin.Exec("DROP SCHEMA " + scratch + " CASCADE") }
	}
	pass, _ := u.User.Password()
	admin, err = sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", u.User.Username(), pass, u.Host))
	if err == nil {
		_, err = admin.Exec("CREATE DATABASE " + scratch)
	}
	if err != nil {
		log.Fatal(err)
	}
	v.Path = "/" + strings.TrimPrefix(scratch, "/")
	return admin, v.String(), func() { _, _ = admin.Exec("DROP DATABASE " + scratch) }
}
